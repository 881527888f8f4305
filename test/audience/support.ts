// API wrappers for the audience tests (contacts, events, segments, campaigns): a CSV upload, every page of
// GET /contacts, /v1/track.
import type { Api, ApiResponse } from "../support/server";

export function uploadCsv(api: Api, key: string, content: string | Blob, filename = "contacts.csv"): Promise<ApiResponse> {
  const fd = new FormData();
  fd.append("file", content instanceof Blob ? content : new File([content], filename, { type: "text/csv" }));
  return api("/contacts/import", { key, method: "POST", raw: fd });
}

export async function listAll(api: Api, key: string, query: string, limit = 100): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const q: string = `/contacts?limit=${limit}${query ? "&" + query : ""}${cursor ? "&cursor=" + encodeURIComponent(cursor) : ""}`;
    const r = await api(q, { key });
    if (r.status !== 200) throw new Error(`list failed: ${r.status} ${r.text}`);
    out.push(...r.body.data);
    if (!r.body.hasMore) return out;
    cursor = r.body.cursor;
  }
  throw new Error("list did not end");
}

export const track = (api: Api, key: string, body: unknown, headers?: Record<string, string>) => api("/v1/track", { key, body, headers });
