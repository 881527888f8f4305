// RSA-SHA256 signatures through the system's OpenSSL (libcrypto.so.3) over bun:ffi.
// Why: Bun's own crypto (BoringSSL) signs RSA-2048 at ~1,600/s per core on our machines, OpenSSL 3
// at ~4,100/s (`openssl speed rsa2048`; measured through this binding: ~3,400/s on a loaded
// machine beside Bun's ~1,200/s). DKIM signing is the largest single CPU cost of a message, so a
// campaign's delivery rate follows it. PKCS#1 v1.5 signatures are deterministic: both libraries
// produce the same bytes for the same key and data (test/mail/units.test.ts, DKIM).
// Where libcrypto cannot be loaded (no OpenSSL 3 on the host, another OS, bun:ffi unavailable),
// `openSsl()` answers null and the Signer keeps Bun's WebCrypto.
// Synchronous: a signature costs ~0.25 ms of the calling thread (the message-building worker).
import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";

const SYMBOLS = {
  BIO_new_mem_buf: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.ptr },
  BIO_free: { args: [FFIType.ptr], returns: FFIType.i32 },
  PEM_read_bio_PrivateKey: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.ptr },
  EVP_PKEY_free: { args: [FFIType.ptr], returns: FFIType.void },
  EVP_PKEY_get_base_id: { args: [FFIType.ptr], returns: FFIType.i32 },
  EVP_MD_CTX_new: { args: [], returns: FFIType.ptr },
  EVP_MD_CTX_reset: { args: [FFIType.ptr], returns: FFIType.i32 },
  EVP_sha256: { args: [], returns: FFIType.ptr },
  EVP_DigestSignInit: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  EVP_DigestSign: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i32 },
  ERR_clear_error: { args: [], returns: FFIType.void },
} as const;

const LIBRARIES = ["libcrypto.so.3", "libcrypto.3.dylib", "/opt/homebrew/lib/libcrypto.3.dylib", "/usr/local/lib/libcrypto.3.dylib"];
/** EVP_PKEY_RSA (NID_rsaEncryption). */
const EVP_PKEY_RSA = 6;
const KEYS_MAX = 1000;

type Lib = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

export class OpenSslRsa {
  private readonly keys = new Map<string, Pointer | null>();
  private readonly ctx: Pointer;
  private readonly sha256: Pointer;
  private readonly sig = new Uint8Array(1024);
  private readonly sigLen = new BigUint64Array(1);

  constructor(private readonly lib: Lib) {
    const ctx = lib.EVP_MD_CTX_new() as Pointer | null;
    const sha256 = lib.EVP_sha256() as Pointer | null;
    if (!ctx || !sha256) throw new Error("libcrypto: no digest context");
    this.ctx = ctx;
    this.sha256 = sha256;
  }

  /** The key's handle, or null when OpenSSL does not read it as an RSA private key. */
  private key(pem: string): Pointer | null {
    let k = this.keys.get(pem);
    if (k !== undefined) return k;
    const bytes = Buffer.from(pem + "\0", "utf8");
    const bio = this.lib.BIO_new_mem_buf(ptr(bytes), -1);
    let pkey: Pointer | null = null;
    if (bio) {
      pkey = this.lib.PEM_read_bio_PrivateKey(bio, null, null, null) as Pointer | null;
      this.lib.BIO_free(bio);
    }
    if (pkey && this.lib.EVP_PKEY_get_base_id(pkey) !== EVP_PKEY_RSA) {
      this.lib.EVP_PKEY_free(pkey);
      pkey = null;
    }
    if (!pkey) this.lib.ERR_clear_error();
    if (this.keys.size >= KEYS_MAX) this.evictOldest();
    this.keys.set(pem, pkey);
    return pkey;
  }

  private evictOldest() {
    const [pem, pkey] = this.keys.entries().next().value!;
    this.keys.delete(pem);
    if (pkey) this.lib.EVP_PKEY_free(pkey);
  }

  /** RSASSA-PKCS1-v1_5 with SHA-256 over `data`; the signature's bytes, or null when the key is not an RSA key OpenSSL reads. */
  sign(pem: string, data: Uint8Array): Buffer | null {
    const pkey = this.key(pem);
    if (!pkey) return null;
    this.lib.EVP_MD_CTX_reset(this.ctx);
    this.sigLen[0] = BigInt(this.sig.length);
    if (
      this.lib.EVP_DigestSignInit(this.ctx, null, this.sha256, null, pkey) !== 1 ||
      this.lib.EVP_DigestSign(this.ctx, this.sig, this.sigLen, data, data.length) !== 1
    ) {
      this.lib.ERR_clear_error();
      throw new Error("OpenSSL could not sign with this key");
    }
    return Buffer.from(this.sig.subarray(0, Number(this.sigLen[0])));
  }
}

let loaded: OpenSslRsa | null | undefined;

/** The process's (this thread's) OpenSSL binding, or null where libcrypto 3 cannot be loaded. */
export function openSsl(): OpenSslRsa | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  for (const name of LIBRARIES) {
    try {
      loaded = new OpenSslRsa(dlopen(name, SYMBOLS).symbols);
      break;
    } catch {
      // not this one
    }
  }
  return loaded;
}
