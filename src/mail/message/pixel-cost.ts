// What the open pixel costs a message with SpamAssassin's local rules, estimated from its body source
// (the campaign and template editors show it; pure, shared with the dashboard).
//
// SpamAssassin's HTML_IMAGE_ONLY_04 … _32 ("HTML: images with 0-400 … 2800-3200 bytes of words")
// fire when an HTML part holds any <img> and its raw length (markup included, not only words) is in
// the range (Mail::SpamAssassin::HTML counts the length of the whole part, the plugin HTMLEval checks
// `inside{img}`). Where the pixel sits and how it is written change nothing; only the length of the
// part and whether it has images of its own do. The scores below are the local-rules set (score set
// 0: no network tests, no Bayes) of 50_scores.cf in SpamAssassin 4.0, what a receiver running local
// rules only adds.
import { documentClose, documentOpen, footerHtml, isFragment, pixelHtml } from "../tracking/decorate";

/** [upper bound (bytes, inclusive), rule, local-rules score]; a range starts above the previous bound. */
export const IMAGE_ONLY_RULES: readonly [number, string, number][] = [
  [400, "HTML_IMAGE_ONLY_04", 1.68],
  [800, "HTML_IMAGE_ONLY_08", 0.585],
  [1200, "HTML_IMAGE_ONLY_12", 1.381],
  [1600, "HTML_IMAGE_ONLY_16", 1.969],
  [2000, "HTML_IMAGE_ONLY_20", 2.109],
  [2400, "HTML_IMAGE_ONLY_24", 2.799],
  [2800, "HTML_IMAGE_ONLY_28", 2.799],
  [3200, "HTML_IMAGE_ONLY_32", 2.196],
];
/** Above this many bytes of HTML no HTML_IMAGE_ONLY_* rule fires. */
export const IMAGE_ONLY_MAX = 3200;

/** The rule an HTML part of `length` bytes fires when it holds an image (null above 3200 bytes). */
export function imageOnlyRule(length: number): { rule: string; score: number } | null {
  if (length <= 0) return null;
  for (const [max, rule, score] of IMAGE_ONLY_RULES) if (length <= max) return { rule, score };
  return null;
}

export interface PixelCostInput {
  /** The body source (template syntax allowed: variables are counted as written). */
  body: string;
  type: "TRANSACTIONAL" | "MARKETING" | "HEADLESS";
  /** The service's public URL (the base of the pixel, tracked links and subscription links). */
  publicUrl: string;
  /** Whether links are click-tracked (they become publicUrl/t/c/…). */
  clickTracking: boolean;
  /** The project's postal address (in the MARKETING footer). */
  postalAddress?: string | null;
}

export interface PixelCost {
  /** Estimated bytes of the HTML part as sent with the pixel (document, footer, tracked links). */
  length: number;
  /** The rule the message fires with the pixel, and without it (null: none). */
  withPixel: { rule: string; score: number } | null;
  withoutPixel: { rule: string; score: number } | null;
  /** Points the pixel adds (0 when it changes nothing). */
  cost: number;
  /** Bytes of content to add for the pixel to cost nothing (0 when it already does). */
  missingBytes: number;
}

const TOKEN = "x".repeat(64);
const LINK = /<(?:a|area)\b[^>]*\shref\s*=\s*["']?https?:\/\/[^"'\s>]*/gi;
const IMG = /<img\b/i;

/** Estimates the HTML part of a message with this body as the service sends it, with and without the pixel. */
export function pixelCost(input: PixelCostInput): PixelCost {
  const body = input.body;
  let length = body.length;
  if (isFragment(body)) length += documentOpen.length + documentClose.length;
  if (input.type === "MARKETING" && !/\{\{\{?\s*unsubscribeUrl\b/.test(body)) {
    length += footerHtml(`${input.publicUrl}/unsubscribe/${TOKEN}`, `${input.publicUrl}/manage/${TOKEN}`, "someone@example.com", input.postalAddress).length;
  }
  if (input.clickTracking) {
    // A tracked href: publicUrl/t/c/<message token>.<link key> (about 60 characters after the base).
    for (const m of body.match(LINK) ?? []) length += Math.max(0, `${input.publicUrl}/t/c/${"x".repeat(60)}`.length - (m.length - m.search(/https?:/i)));
  }
  const pixel = pixelHtml(`${input.publicUrl}/t/o/${"x".repeat(60)}`).length;
  const ownImage = IMG.test(body);
  const withPixel = imageOnlyRule(length + pixel);
  const withoutPixel = ownImage ? imageOnlyRule(length) : null;
  const cost = Math.max(0, Math.round(((withPixel?.score ?? 0) - (withoutPixel?.score ?? 0)) * 1000) / 1000);
  return { length: length + pixel, withPixel, withoutPixel, cost, missingBytes: cost > 0 ? IMAGE_ONLY_MAX + 1 - (length + pixel) : 0 };
}
