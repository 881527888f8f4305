// RSA signing off the main thread. An RSA-2048 signature is the largest single CPU cost of a
// message (~0.6 ms with node:crypto's sign on the calling thread). Bun runs WebCrypto's
// crypto.subtle.sign on its native thread pool: the main thread stays free for HTTP and SMTP, and
// on this hardware it is also ~1.5x faster than node:crypto (measured: ~2,200/s vs ~1,400/s).
// Keys are imported once per PEM and kept as CryptoKeys.
// Where the host has OpenSSL 3 (openssl.ts), RSA keys are signed there instead, synchronously on the
// calling thread (the message-building worker): ~2.5x faster per core than Bun's BoringSSL.
import { createHash, createPrivateKey, sign as nodeSign, type KeyObject } from "node:crypto";
import { openSsl, type OpenSslRsa } from "./openssl";

const ALG = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;

export interface SignerOptions {
  /** Sign RSA keys with the system's OpenSSL when it can be loaded (default true). */
  openssl?: boolean;
}

export class Signer {
  private keys = new Map<string, Promise<CryptoKey | KeyObject>>();
  private readonly openssl: OpenSslRsa | null;

  constructor(opts: SignerOptions = {}) {
    this.openssl = opts.openssl === false ? null : openSsl();
  }

  /** Which library signs RSA keys. */
  get rsaBackend(): "openssl" | "webcrypto" {
    return this.openssl ? "openssl" : "webcrypto";
  }

  private key(pem: string): Promise<CryptoKey | KeyObject> {
    let k = this.keys.get(pem);
    if (!k) {
      const obj = createPrivateKey(pem);
      const der = obj.export({ type: "pkcs8", format: "der" });
      // A key WebCrypto does not take (not RSA) is signed with node:crypto instead.
      k = crypto.subtle.importKey("pkcs8", der, ALG, false, ["sign"]).catch(() => obj);
      this.keys.set(pem, k);
      if (this.keys.size > 10_000) this.keys.clear();
    }
    return k;
  }

  /**
   * Signs `data` (ASCII) with the PEM private key; returns base64. RSA keys: RSA-SHA256 (PKCS#1 v1.5).
   * Ed25519 keys: ed25519-sha256 of RFC 8463, PureEdDSA over the SHA-256 of the data.
   */
  async sign(pem: string, data: string): Promise<string> {
    const bytes = Buffer.from(data, "latin1");
    const fast = this.openssl?.sign(pem, bytes);
    if (fast) return fast.toString("base64");
    const key = await this.key(pem);
    if (key instanceof CryptoKey) return Buffer.from(await crypto.subtle.sign(ALG, key, bytes)).toString("base64");
    if (key.asymmetricKeyType === "ed25519") return nodeSign(null, createHash("sha256").update(bytes).digest(), key).toString("base64");
    return nodeSign("sha256", bytes, key).toString("base64");
  }
}

/** One signer per process and backend (its key cache is shared by the service instances of a test run). */
const shared = new Map<boolean, Signer>();
export function sharedSigner(opts: SignerOptions = {}): Signer {
  const k = opts.openssl !== false;
  let s = shared.get(k);
  if (!s) shared.set(k, (s = new Signer(opts)));
  return s;
}
