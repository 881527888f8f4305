import type { Generated } from "kysely";

export type DomainStatus = "PENDING" | "VERIFIED" | "FAILED";
export type TemplateType = "TRANSACTIONAL" | "MARKETING" | "HEADLESS";

export interface DomainsTable {
  id: string;
  project_id: string;
  /** Lower-case, no trailing dot. */
  domain: string;
  status: Generated<DomainStatus>;
  dkim_selector: string;
  /** PKCS#8 PEM. Never leaves the server. */
  dkim_private_key: string;
  /** Base64 SPKI DER: the p= tag of the DKIM record. */
  dkim_public_key: string;
  /** Optional Ed25519 key (RFC 8463): PKCS#8 PEM and base64 of the raw 32-byte public key. */
  dkim_ed25519_selector: Generated<string | null>;
  dkim_ed25519_private_key: Generated<string | null>;
  dkim_ed25519_public_key: Generated<string | null>;
  /** A rotation in progress: the next RSA key (promoted once its record verifies). */
  dkim_next_selector: Generated<string | null>;
  dkim_next_private_key: Generated<string | null>;
  dkim_next_public_key: Generated<string | null>;
  /** JSON array of DnsRecord (see src/modules/domains/records.ts). */
  records: Generated<string>;
  verified_at: number | null;
  last_checked_at: number | null;
  created_at: number;
  updated_at: number;
}

/** What a template and a campaign both hold: a named message from a sender. */
export interface MessageColumns {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
}

export interface TemplatesTable extends MessageColumns {
  type: Generated<TemplateType>;
  /** The open pixel: NULL = the project's tracking mode, 0 = never, 1 = unless tracking is DISABLED (024). */
  track_opens: Generated<number | null>;
  created_at: number;
  updated_at: number;
}

export interface SenderTables {
  domains: DomainsTable;
  templates: TemplatesTable;
}
