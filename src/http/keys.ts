import { createHash, timingSafeEqual } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../db";

export interface ProjectAuth {
  projectId: string;
  kind: "public" | "secret";
  disabled: boolean;
  disabledReason: string | null;
}

interface Entry extends ProjectAuth {
  key: Buffer;
}

const digest = (key: string) => createHash("sha256").update(key).digest("base64");

/**
 * API key -> project, cached in memory. Looked up by a digest of the key, then compared in
 * constant time against the stored key. Misses are read from the database (indexed) and
 * never cached, so bad keys cannot fill memory. Rotation and project changes call
 * `invalidate(ctx, "keys", projectId)` (src/jobs/peers.ts), which runs invalidate() here and on every peer.
 */
export class KeyCache {
  private byDigest = new Map<string, Entry>();
  constructor(private readonly db: Kysely<DB>) {}

  async resolve(key: string): Promise<ProjectAuth | null> {
    if (!/^(pk|sk)_[A-Za-z0-9_-]{8,128}$/.test(key)) return null;
    const d = digest(key);
    let entry = this.byDigest.get(d);
    if (!entry) {
      const col = key.startsWith("pk_") ? "public_key" : "secret_key";
      const row = await this.db
        .selectFrom("projects")
        .select(["id", "public_key", "secret_key", "disabled", "disabled_reason"])
        .where(col, "=", key)
        .executeTakeFirst();
      if (!row) return null;
      const stored = col === "public_key" ? row.public_key : row.secret_key;
      entry = {
        projectId: row.id,
        kind: col === "public_key" ? "public" : "secret",
        disabled: !!row.disabled,
        disabledReason: row.disabled_reason,
        key: Buffer.from(stored),
      };
      this.byDigest.set(digest(stored), entry);
    }
    const given = Buffer.from(key);
    if (given.length !== entry.key.length || !timingSafeEqual(given, entry.key)) return null;
    return entry;
  }

  invalidate(projectId: string): void {
    for (const [d, e] of this.byDigest) if (e.projectId === projectId) this.byDigest.delete(d);
  }

  /** Forgets every key (a peer's message may have been missed: src/jobs/peers.ts). */
  clear(): void {
    this.byDigest.clear();
  }
}

export function generateKey(kind: "pk" | "sk"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(kind === "sk" ? 32 : 24));
  return `${kind}_${Buffer.from(bytes).toString("base64url")}`;
}
