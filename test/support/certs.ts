// A throwaway CA and leaf certificates made with the openssl CLI (tests of verified TLS).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestCa {
  dir: string;
  caFile: string;
  caPem: string;
  /** A key + certificate for these DNS names, signed by the CA. */
  issue(names: string[]): { key: string; cert: string; keyFile: string; certFile: string };
}

function openssl(args: string[], cwd: string) {
  const r = Bun.spawnSync(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr.toString()}`);
}

export function makeCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-ca-"));
  openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=mailsvc test CA"], dir);
  let n = 0;
  return {
    dir,
    caFile: join(dir, "ca.pem"),
    caPem: readFileSync(join(dir, "ca.pem"), "utf8"),
    issue(names) {
      const base = `leaf${++n}`;
      writeFileSync(join(dir, `${base}.ext`), `subjectAltName=${names.map((x) => `DNS:${x}`).join(",")}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
      openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${base}.key`, "-out", `${base}.csr`, "-subj", `/CN=${names[0]}`], dir);
      openssl(["x509", "-req", "-in", `${base}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${base}.pem`, "-days", "2", "-extfile", `${base}.ext`], dir);
      return { key: readFileSync(join(dir, `${base}.key`), "utf8"), cert: readFileSync(join(dir, `${base}.pem`), "utf8"), keyFile: join(dir, `${base}.key`), certFile: join(dir, `${base}.pem`) };
    },
  };
}
