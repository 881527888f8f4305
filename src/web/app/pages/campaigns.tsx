import { useState } from "react";
import { Link, useLocation } from "wouter";
import { api, fmtDate, listOf, unwrap, type OffsetPage } from "../api";
import { BarChart } from "../components/charts";
import { ConditionBuilder, emptyTree, useLiveCount, type Tree } from "../components/conditions";
import { OpenTrackingField } from "../components/open-tracking";
import { Badge, Empty, ErrorBanner, Loading, Modal, Notice, Page, Progress, Select, TextInput, useAction, useAsync, usePoll, Table, DeleteButton, OffsetPager, SearchForm } from "../ui";
import type { Segment } from "./segments";
import { Preview, type Template } from "./templates";

/** A campaign is a message (what a template holds) with an audience, a state and its counters. */
export interface Campaign extends Counts, Template {
  status: "DRAFT" | "SCHEDULED" | "SENDING" | "SENT" | "CANCELLED";
  audienceType: "ALL" | "SEGMENT" | "FILTERED";
  segmentId: string | null;
  audienceCondition: Tree | null;
  templateId?: string | null;
  scheduledFor: string | null;
  sentAt: string | null;
  updatedAt: string;
}

const STATUSES = ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"];

export function CampaignsPage() {
  const [status, setStatus] = useState("");
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  const [page, setPage] = useState(1);
  const list = useAsync(() => api<OffsetPage<Campaign>>("/campaigns", { query: { status, search: query, page, pageSize: 20 } }), [status, query, page]);
  const [, navigate] = useLocation();
  usePoll(list.reload, 3000, !!list.data?.data.some((c) => c.status === "SENDING"));
  return (
    <Page title="Campaigns" actions={<button type="button" className="primary" onClick={() => navigate("/campaigns/new")}>New campaign</button>}>
      <SearchForm value={search} onChange={setSearch} onSearch={() => { setQuery(search); setPage(1); }}>
        <Select label="Status" value={status} onChange={(v) => { setStatus(v); setPage(1); }} options={[{ value: "", label: "Any status" }, ...STATUSES.map((s) => ({ value: s, label: s }))]} />
      </SearchForm>
      <ErrorBanner error={list.error} />
      {list.loading && !list.data ? <Loading /> : list.data?.data.length === 0 ? <Empty>No campaigns yet.</Empty> : (
        <Table head={["Name", "Status", "Audience", "Sent", "Opened", "Clicked", "Updated"]}>
            {list.data?.data.map((c) => (
              <tr key={c.id}>
                <td><Link href={`/campaigns/${c.id}`}>{c.name}</Link><div className="hint">{c.subject}</div></td>
                <td><Badge>{c.status}</Badge>{c.scheduledFor && c.status === "SCHEDULED" && <div className="hint">{fmtDate(c.scheduledFor)}</div>}</td>
                <td>{c.audienceType}</td>
                <td>{c.sentCount}/{c.totalRecipients}</td>
                <td>{c.openedCount}</td>
                <td>{c.clickedCount}</td>
                <td>{fmtDate(c.updatedAt)}</td>
              </tr>
            ))}
          </Table>
      )}
      <OffsetPager page={page} totalPages={list.data?.totalPages} onPage={setPage} />
    </Page>
  );
}

export function CampaignPage({ id }: { id: string }) {
  const isNew = id === "new";
  const c = useAsync(() => (isNew ? Promise.resolve(null) : api<Campaign>(`/campaigns/${id}`).then((x) => unwrap<Campaign>(x))), [id]);
  usePoll(c.reload, 1000, c.data?.status === "SENDING");
  if (c.error) return <Page title="Campaign"><ErrorBanner error={c.error} /></Page>;
  if (c.loading && !c.data) return <Loading />;
  const campaign = c.data ?? null;
  // A SCHEDULED campaign is still editable: the composer, with its schedule, "Send now" and "Cancel".
  if (!campaign || campaign.status === "DRAFT" || campaign.status === "SCHEDULED") return <Composer key={id} campaign={campaign} reload={c.reload} />;
  return <CampaignReport campaign={campaign} reload={c.reload} />;
}

function Composer({ campaign, reload }: { campaign: Campaign | null; reload: () => void }) {
  const [name, setName] = useState(campaign?.name ?? "");
  const [subject, setSubject] = useState(campaign?.subject ?? "");
  const [from, setFrom] = useState(campaign?.from ?? "");
  const [fromName, setFromName] = useState(campaign?.fromName ?? "");
  const [replyTo, setReplyTo] = useState(campaign?.replyTo ?? "");
  const [type, setType] = useState<Campaign["type"]>(campaign?.type ?? "MARKETING");
  const [body, setBody] = useState(campaign?.body ?? "<p>Hello {{ firstName ?? \"there\" }},</p>\n<p></p>");
  const [templateId, setTemplateId] = useState(campaign?.templateId ?? "");
  const [trackOpens, setTrackOpens] = useState<boolean | null>(campaign?.trackOpens ?? null);
  const [audienceType, setAudienceType] = useState<Campaign["audienceType"]>(campaign?.audienceType ?? "ALL");
  const [segmentId, setSegmentId] = useState(campaign?.segmentId ?? "");
  const [tree, setTree] = useState<Tree>(campaign?.audienceCondition ?? emptyTree());
  const [scheduleAt, setScheduleAt] = useState("");
  const [testEmail, setTestEmail] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [note, setNote] = useState("");
  const act = useAction();
  const [, navigate] = useLocation();
  const templates = useAsync(() => api<OffsetPage<Template>>("/templates", { query: { pageSize: 100 } }).then((p) => p.data), []);
  const segments = useAsync(() => api<Segment[]>("/segments").then(listOf<Segment>), []);
  const countTree: Tree | null =
    audienceType === "FILTERED" ? tree : audienceType === "SEGMENT" ? (segmentId ? { logic: "AND", groups: [{ filters: [{ field: `segment.${segmentId}`, operator: "memberOfSegment" }] }] } : null) : { logic: "AND", groups: [] };
  const live = useLiveCount(countTree, { subscribedOnly: type !== "TRANSACTIONAL" });

  const payload = () => ({
    name, subject, body, from, type,
    fromName: fromName || null, replyTo: replyTo || null,
    templateId: templateId || null,
    trackOpens,
    audienceType,
    segmentId: audienceType === "SEGMENT" ? segmentId || null : null,
    audienceCondition: audienceType === "FILTERED" ? tree : null,
  });
  /** Saves the draft and answers its id. */
  const save = async (): Promise<string> => {
    if (campaign) {
      await api(`/campaigns/${campaign.id}`, { method: "PUT", body: payload() });
      return campaign.id;
    }
    const created = unwrap<Campaign>(await api("/campaigns", { body: payload() }));
    navigate(`/campaigns/${created.id}`, { replace: true });
    return created.id;
  };

  return (
    <Page
      title={campaign ? `Campaign: ${campaign.name}` : "New campaign"}
      actions={campaign && (
        <>
          <Duplicate id={campaign.id} />
          <DeleteButton what="campaign" name={campaign.name} path={`/campaigns/${campaign.id}`} act={act} done={() => navigate("/campaigns")} />
        </>
      )}
    >
      <ErrorBanner error={act.error} />
      {note && <Notice kind="ok">{note}</Notice>}
      {campaign?.status === "SCHEDULED" && (
        <div className="banner info row spread" role="status" aria-label="Schedule">
          <span>Scheduled for <strong>{fmtDate(campaign.scheduledFor)}</strong>. You can still change it, send it now, or cancel it.</span>
          <button type="button" className="danger" disabled={act.busy} onClick={() => {
            if (!confirm("Cancel this scheduled campaign? It will not be sent.")) return;
            void act.run(async () => {
              await api(`/campaigns/${campaign.id}/cancel`, { method: "POST" });
              reload();
            });
          }}>Cancel campaign</button>
        </div>
      )}
      <div className="editor">
        <form className="card" onSubmit={(e) => { e.preventDefault(); void act.run(async () => { await save(); setNote(campaign?.status === "SCHEDULED" ? "Changes saved; the schedule is unchanged." : "Draft saved."); reload(); }); }}>
          <TextInput label="Campaign name" value={name} onChange={setName} required />
          <Select
            label="Start from a template (optional)"
            value={templateId}
            onChange={(v) => {
              setTemplateId(v);
              const t = templates.data?.find((x) => x.id === v);
              if (t) {
                setSubject(t.subject);
                setBody(t.body);
                setFrom(t.from);
                setFromName(t.fromName ?? "");
                setReplyTo(t.replyTo ?? "");
                setType(t.type);
                setTrackOpens(t.trackOpens ?? null);
              }
            }}
            options={[{ value: "", label: "Inline body (no template)" }, ...(templates.data ?? []).map((t) => ({ value: t.id, label: t.name }))]}
          />
          <TextInput label="Subject" value={subject} onChange={setSubject} required />
          <div className="row">
            <TextInput label="From address" type="email" value={from} onChange={setFrom} required />
            <TextInput label="From name" value={fromName} onChange={setFromName} />
          </div>
          <div className="row">
            <TextInput label="Reply-to" type="email" value={replyTo} onChange={setReplyTo} />
            <Select label="Type" value={type} onChange={setType} options={["MARKETING", "TRANSACTIONAL", "HEADLESS"]} />
          </div>
          <div className="field">
            <label htmlFor="camp-body">Body (HTML)</label>
            <textarea id="camp-body" className="mono" rows={10} value={body} onChange={(e) => setBody(e.target.value)} />
          </div>
          <OpenTrackingField body={body} type={type} value={trackOpens} onChange={setTrackOpens} what="campaign" />
          <fieldset>
            <legend>Audience</legend>
            <div className="row" role="radiogroup" aria-label="Audience type">
              {(["ALL", "SEGMENT", "FILTERED"] as const).map((a) => (
                <label key={a} className="radio">
                  <input type="radio" name="audienceType" value={a} checked={audienceType === a} onChange={() => setAudienceType(a)} />{" "}
                  {a === "ALL" ? "All contacts" : a === "SEGMENT" ? "A segment" : "Contacts matching conditions"}
                </label>
              ))}
            </div>
            {audienceType === "SEGMENT" && (
              <Select label="Segment" value={segmentId} onChange={setSegmentId} options={[{ value: "", label: "Choose a segment…" }, ...(segments.data ?? []).map((s) => ({ value: s.id, label: `${s.name} (${s.memberCount})` }))]} />
            )}
            {audienceType === "FILTERED" && <ConditionBuilder value={tree} onChange={setTree} label="Send to contacts matching" />}
            <p aria-live="polite">
              {live.count !== null ? <>Recipients right now: <strong data-testid="recipient-count">{live.count}</strong>{type !== "TRANSACTIONAL" ? " (subscribed contacts only)" : ""}</> : live.error ? <span className="hint">{live.error}</span> : null}
            </p>
          </fieldset>
          <div className="row">
            <button type="submit" disabled={act.busy}>{campaign?.status === "SCHEDULED" ? "Save changes" : campaign ? "Save draft" : "Create draft"}</button>
          </div>
          {campaign && (
            <>
              <div className="row">
                <TextInput label="Send a test to" type="email" value={testEmail} onChange={setTestEmail} />
                <button type="button" disabled={act.busy || !testEmail} onClick={() => void act.run(async () => {
                  await save();
                  await api(`/campaigns/${campaign.id}/test`, { body: { email: testEmail } });
                  setNote(`Test sent to ${testEmail}.`);
                })}>Send test</button>
              </div>
              <div className="row">
                <div className="field">
                  <label htmlFor="schedule-at">Schedule for</label>
                  <input id="schedule-at" type="datetime-local" value={scheduleAt} onChange={(e) => setScheduleAt(e.target.value)} />
                </div>
                <button type="button" disabled={act.busy || !scheduleAt} onClick={() => void act.run(async () => {
                  await save();
                  await api(`/campaigns/${campaign.id}/send`, { body: { scheduledFor: new Date(scheduleAt).toISOString() } });
                  setNote(`Scheduled for ${fmtDate(new Date(scheduleAt).toISOString())}.`);
                  reload();
                })}>{campaign.status === "SCHEDULED" ? "Reschedule" : "Schedule"}</button>
                <button type="button" className="primary" disabled={act.busy} onClick={() => setConfirming(true)}>Send now…</button>
              </div>
            </>
          )}
        </form>
        <Preview subject={subject} body={body} sample='{"email":"jane@example.com","firstName":"Jane"}' />
      </div>
      {campaign && (
        <Modal open={confirming} title="Send this campaign now?" onClose={() => setConfirming(false)}>
          <p>
            “{subject}” goes to {live.count !== null ? <strong>{live.count} recipients</strong> : "its audience"} from {from}. This cannot be undone (you can cancel while it is sending).
          </p>
          <div className="row">
            <button type="button" className="primary" onClick={() => {
              setConfirming(false);
              void act.run(async () => {
                await save();
                await api(`/campaigns/${campaign.id}/send`, { body: {} });
                reload();
              });
            }}>Send to everyone</button>
            <button type="button" onClick={() => setConfirming(false)}>Cancel</button>
          </div>
        </Modal>
      )}
    </Page>
  );
}

function Duplicate({ id }: { id: string }) {
  const act = useAction();
  const [, navigate] = useLocation();
  return (
    <>
      <button type="button" onClick={() => void act.run(async () => {
        const c = unwrap<Campaign>(await api(`/campaigns/${id}/duplicate`, { method: "POST" }));
        navigate(`/campaigns/${c.id}`);
      })}>Duplicate</button>
      <ErrorBanner error={act.error} />
    </>
  );
}

/** A campaign's recipients and counters (the campaign object and its stats). */
interface Counts {
  totalRecipients: number;
  sentCount: number;
  deliveredCount: number;
  openedCount: number;
  clickedCount: number;
  bouncedCount: number;
}

interface Stats extends Counts {
  complainedCount?: number;
  unsubscribedCount?: number;
  deliveryRate?: number;
  openRate?: number;
  clickRate?: number;
  bounceRate?: number;
}

function CampaignReport({ campaign, reload }: { campaign: Campaign; reload: () => void }) {
  const stats = useAsync(() => api<Stats>(`/campaigns/${campaign.id}/stats`), [campaign.id, campaign.updatedAt, campaign.sentCount, campaign.openedCount]);
  const act = useAction();
  usePoll(stats.reload, 2000, campaign.status === "SENDING" || campaign.status === "SENT");
  const s = stats.data;
  const total = s?.totalRecipients || campaign.totalRecipients;
  return (
    <Page
      title={`Campaign: ${campaign.name}`}
      actions={
        <>
          <Duplicate id={campaign.id} />
          {(campaign.status === "SCHEDULED" || campaign.status === "SENDING") && (
            <button type="button" className="danger" onClick={() => {
              if (!confirm("Cancel this campaign? Emails not yet handed to SMTP are cancelled.")) return;
              void act.run(async () => {
                await api(`/campaigns/${campaign.id}/cancel`, { method: "POST" });
                reload();
              });
            }}>Cancel campaign</button>
          )}
        </>
      }
    >
      <ErrorBanner error={act.error ?? stats.error} />
      <p>
        Status <Badge>{campaign.status}</Badge> · “{campaign.subject}” from {campaign.from} · audience {campaign.audienceType}
        {campaign.scheduledFor && <> · scheduled for {fmtDate(campaign.scheduledFor)}</>}
        {campaign.sentAt && <> · started {fmtDate(campaign.sentAt)}</>}
      </p>
      {campaign.status === "SENDING" && <Progress value={total ? ((s?.sentCount ?? campaign.sentCount) / total) * 100 : 0} label="Sending progress" />}
      {s && (
        <>
          <div className="stats" aria-label="Campaign statistics">
            {([
              ["Recipients", s.totalRecipients],
              ["Sent", s.sentCount],
              ["Delivered", s.deliveredCount],
              ["Opened", s.openedCount],
              ["Clicked", s.clickedCount],
              ["Bounced", s.bouncedCount],
              ["Complaints", s.complainedCount ?? 0],
              ["Unsubscribed", s.unsubscribedCount ?? 0],
            ] as const).map(([label, v]) => (
              <div className="card" key={label}>
                <div className="stat" data-testid={`stat-${label.toLowerCase()}`}>{v}</div>
                <div className="stat-label">{label}</div>
              </div>
            ))}
          </div>
          <p className="hint">Delivery {s.deliveryRate ?? 0}% · open {s.openRate ?? 0}% · click {s.clickRate ?? 0}% · bounce {s.bounceRate ?? 0}% (of sent)</p>
          <section className="card" aria-labelledby="funnel-h">
            <h2 id="funnel-h">Funnel</h2>
            {s.sentCount === 0 ? <Empty>Nothing sent yet: the funnel fills in as emails go out.</Empty> : <BarChart label="Campaign funnel" labels={["Sent", "Delivered", "Opened", "Clicked", "Bounced"]} values={[s.sentCount, s.deliveredCount, s.openedCount, s.clickedCount, s.bouncedCount]} />}
          </section>
        </>
      )}
      <p><Link href={`/emails`}>See every email in the log</Link></p>
    </Page>
  );
}
