// Password hashes: argon2id at 19 MiB / 2 passes; hashes made with Bun's defaults (64 MiB) still verify.
import { expect, test } from "bun:test";
import { hashPassword, verifyPassword } from "../../src/modules/users/passwords";

test("new hashes are argon2id with 19 MiB and 2 passes, and verify", async () => {
  const h = await hashPassword("correct horse battery");
  expect(h.startsWith("$argon2id$v=19$m=19456,t=2,")).toBe(true);
  expect(await verifyPassword("correct horse battery", h)).toBe(true);
  expect(await verifyPassword("wrong horse battery", h)).toBe(false);
});

test("a hash made with other parameters (Bun's default, 64 MiB) still verifies", async () => {
  const old = await Bun.password.hash("correct horse battery");
  expect(old).toContain("m=65536");
  expect(await verifyPassword("correct horse battery", old)).toBe(true);
});

test("many hashes at once all complete (two run at a time, the rest wait their turn)", async () => {
  const hashes = await Promise.all(Array.from({ length: 6 }, (_, i) => hashPassword(`password-${i}`)));
  expect(new Set(hashes).size).toBe(6);
  expect(await Promise.all(hashes.map((h, i) => verifyPassword(`password-${i}`, h)))).toEqual([true, true, true, true, true, true]);
});
