// DMARC aggregate reports (RFC 7489 section 7.2 and appendix C): an XML <feedback> document sent
// as an attachment, gzip'd (.xml.gz), zipped (.zip) or plain. Parsed into counts per source IP.
// Pure: bytes in, a report (or null when the message carries none) out.
import { gunzipSync } from "node:zlib";
import type { XMLParser } from "fast-xml-parser";
import type { unzipSync as UnzipSync } from "fflate";

export interface DmarcRow {
  sourceIp: string;
  count: number;
  disposition: string;
  /** The DMARC-aligned results the reporter evaluated (policy_evaluated): pass | fail. */
  dkim: string;
  spf: string;
}

export interface DmarcAggregate {
  orgName: string;
  reportId: string;
  /** The domain the policy was published for. */
  domain: string;
  beginMs: number;
  endMs: number;
  rows: DmarcRow[];
}

/** Reports are small (a few KB per thousand sources); anything that inflates past this is refused. */
const MAX_XML_BYTES = 20 * 1024 * 1024;

// The XML and zip readers are loaded with the first report (~30 ms of start-up otherwise).
let parser: XMLParser | null = null;
const xmlParser = (): XMLParser =>
  (parser ??= new (require("fast-xml-parser") as { XMLParser: typeof XMLParser }).XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: true, processEntities: false }));
const unzipSync: typeof UnzipSync = (...args) => (require("fflate") as { unzipSync: typeof UnzipSync }).unzipSync(...args);

const asArray = <T>(v: T | T[] | undefined): T[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);
const text = (v: unknown): string => (v === undefined || v === null ? "" : typeof v === "object" ? "" : String(v).trim());

/** Parses one aggregate report XML document; null when it is not one. */
export function parseDmarcXml(xml: string): DmarcAggregate | null {
  let doc: any;
  try {
    doc = xmlParser().parse(xml);
  } catch {
    return null;
  }
  const fb = doc?.feedback;
  if (!fb || typeof fb !== "object") return null;
  const meta = fb.report_metadata ?? {};
  const range = meta.date_range ?? {};
  const domain = text(fb.policy_published?.domain).toLowerCase().replace(/\.$/, "");
  const reportId = text(meta.report_id);
  if (!domain || !reportId) return null;
  const rows: DmarcRow[] = [];
  for (const rec of asArray<any>(fb.record)) {
    const row = rec?.row ?? {};
    const pe = row.policy_evaluated ?? {};
    const sourceIp = text(row.source_ip);
    const count = Number(text(row.count));
    if (!sourceIp || !Number.isFinite(count) || count < 0) continue;
    rows.push({
      sourceIp,
      count: Math.floor(count),
      disposition: text(pe.disposition).toLowerCase() || "none",
      dkim: text(pe.dkim).toLowerCase() === "pass" ? "pass" : "fail",
      spf: text(pe.spf).toLowerCase() === "pass" ? "pass" : "fail",
    });
  }
  const begin = Number(text(range.begin));
  const end = Number(text(range.end));
  return {
    orgName: text(meta.org_name) || "unknown",
    reportId,
    domain,
    beginMs: Number.isFinite(begin) ? begin * 1000 : 0,
    endMs: Number.isFinite(end) ? end * 1000 : 0,
    rows,
  };
}

/** The XML inside an attachment's bytes, whatever the wrapping (gzip, zip, none). */
export function xmlOfAttachment(bytes: Uint8Array): string | null {
  try {
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) return gunzipSync(bytes, { maxOutputLength: MAX_XML_BYTES }).toString("utf8");
    if (bytes[0] === 0x50 && bytes[1] === 0x4b) {
      let total = 0;
      const files = unzipSync(bytes, {
        filter: (f) => {
          total += f.originalSize;
          return /\.xml$/i.test(f.name) && total <= MAX_XML_BYTES;
        },
      });
      const first = Object.values(files)[0];
      return first ? Buffer.from(first).toString("utf8") : null;
    }
    const s = Buffer.from(bytes).toString("utf8");
    return /<feedback[\s>]/.test(s) ? s : null;
  } catch {
    return null;
  }
}

const REPORT_TYPES = /(gzip|zip|xml|octet-stream)/i;

/**
 * The aggregate report a received message carries, if any. `attachments` are the message's parts
 * (mailparser's attachments: a report sent as the whole body is one too).
 */
export function dmarcReportOf(attachments: { contentType?: string; filename?: string; content: Buffer }[]): DmarcAggregate | null {
  for (const a of attachments) {
    if (!REPORT_TYPES.test(a.contentType ?? "") && !/\.(xml|gz|zip)$/i.test(a.filename ?? "")) continue;
    const xml = xmlOfAttachment(a.content);
    const report = xml ? parseDmarcXml(xml) : null;
    if (report) return report;
  }
  return null;
}
