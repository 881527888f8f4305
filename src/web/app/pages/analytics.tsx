import { useState } from "react";
import { api, listOf } from "../api";
import { BarChart, LineChart } from "../components/charts";
import { Checklist, ConfigWarnings, useSetupState } from "../components/setup";
import { Empty, ErrorBanner, Page, Select, useAsync } from "../ui";

interface Series {
  interval: string;
  data: { date: string; sent: number; delivered: number; opened: number; clicked: number; bounced: number; complained: number }[];
}

export function AnalyticsPage() {
  const [days, setDays] = useState("30");
  const from = new Date(Date.now() - Number(days) * 86_400_000).toISOString();
  const series = useAsync(() => api<Series>("/analytics/timeseries", { query: { from, interval: days === "1" ? "hour" : "day" } }), [days]);
  const top = useAsync(() => api<any>("/analytics/top-campaigns", { query: { from, metric: "opens", limit: 5 } }).then(listOf<any>), [days]);
  const events = useAsync(() => api<any>("/analytics/top-events", { query: { from, limit: 8 } }).then(listOf<any>), [days]);
  const stats = useAsync(() => api<any>("/activity/stats", { query: { from } }), [days]);
  const setup = useSetupState();
  const s = stats.data;
  const KEYS = ["sent", "delivered", "opened", "clicked", "bounced"] as const;
  const seriesEmpty = !!series.data && series.data.data.every((d) => KEYS.every((k) => !d[k]));
  return (
    <Page title="Overview" actions={<Select label="Period" value={days} onChange={setDays} options={[{ value: "1", label: "Last 24 hours" }, { value: "7", label: "Last 7 days" }, { value: "30", label: "Last 30 days" }, { value: "90", label: "Last 90 days" }]} />}>
      {setup.data && <Checklist state={setup.data} />}
      {setup.data && <ConfigWarnings warnings={setup.data.warnings} />}
      <ErrorBanner error={stats.error} />
      {s && (
        <div className="stats" aria-label="Totals">
          {([["Sent", s.sent], ["Delivered", s.delivered], ["Opened", s.opened], ["Clicked", s.clicked], ["Bounced", s.bounced], ["Complaints", s.complained]] as const).map(([l, v]) => (
            <div className="card" key={l}><div className="stat">{v ?? 0}</div><div className="stat-label">{l}</div></div>
          ))}
          <div className="card"><div className="stat">{s.openRate ?? 0}%</div><div className="stat-label">Open rate</div></div>
          <div className="card"><div className="stat">{s.clickRate ?? 0}%</div><div className="stat-label">Click rate</div></div>
        </div>
      )}
      <section className="card" aria-labelledby="ts-h">
        <h2 id="ts-h">Email activity</h2>
        <ErrorBanner error={series.error} />
        {seriesEmpty ? <Empty>No emails in this period yet: sent, delivered, opened and clicked emails are counted here.</Empty> : series.data && (
          <LineChart
            label="Emails over time"
            labels={series.data.data.map((d) => (series.data!.interval === "hour" ? d.date.slice(11, 16) : d.date.slice(5, 10)))}
            series={KEYS.map((k) => ({ name: k, values: series.data!.data.map((d) => d[k] ?? 0) }))}
          />
        )}
      </section>
      <div className="grid2">
        <section className="card" aria-labelledby="topc-h">
          <h2 id="topc-h">Top campaigns by opens</h2>
          <ErrorBanner error={top.error} />
          {top.data?.length === 0 ? <Empty>No campaigns sent in this period.</Empty> : top.data?.every((c) => !c.openedCount) ? <Empty>No campaign emails opened in this period yet.</Empty> : top.data && (
            <BarChart label="Top campaigns by opens" labels={top.data.map((c) => c.name)} values={top.data.map((c) => c.openedCount ?? 0)} />
          )}
        </section>
        <section className="card" aria-labelledby="tope-h">
          <h2 id="tope-h">Top events</h2>
          <ErrorBanner error={events.error} />
          {events.data?.length === 0 ? <Empty>No events tracked in this period.</Empty> : events.data && (
            <BarChart label="Top events" labels={events.data.map((e) => e.name)} values={events.data.map((e) => e.count)} />
          )}
        </section>
      </div>
    </Page>
  );
}
