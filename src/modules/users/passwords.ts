import { Slots } from "../../slots";
// Password hashing: argon2id through Bun.password, at OWASP's recommended parameters (19 MiB of
// memory, 2 passes), and at most MAX_CONCURRENT hashes at a time: each one holds its memory for its
// whole run, so a burst of sign-ups or logins (or a hostile client) queues instead of multiplying it
// (Bun's default, 64 MiB each, took the server past 450 MB under scripts/fuzz-hostile.ts). Hashes
// made with other parameters still verify: the parameters are part of the hash.
const PARAMS = { algorithm: "argon2id", memoryCost: 19_456, timeCost: 2 } as const;
const MAX_CONCURRENT = 2;

const hashing = new Slots(MAX_CONCURRENT);

export const hashPassword = (password: string): Promise<string> => hashing.run(() => Bun.password.hash(password, PARAMS));
export const verifyPassword = (password: string, hash: string): Promise<boolean> => hashing.run(() => Bun.password.verify(password, hash));
