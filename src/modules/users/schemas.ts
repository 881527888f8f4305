import { t } from "elysia";

export const Credentials = t.Object({
  email: t.String({ format: "email", maxLength: 320 }),
  password: t.String({ minLength: 8, maxLength: 1024 }),
});
export const TokenBody = t.Object({ token: t.String({ minLength: 1, maxLength: 512 }) });
export const ResetPasswordBody = t.Object({
  token: t.String({ minLength: 1, maxLength: 512 }),
  password: t.String({ minLength: 8, maxLength: 1024 }),
});
export const EmailBody = t.Object({ email: t.String({ format: "email", maxLength: 320 }) });
/** Login checks credentials, not password rules: a short wrong password is 401 like any wrong password. */
export const LoginBody = t.Object({
  email: t.String({ format: "email", maxLength: 320 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
});
