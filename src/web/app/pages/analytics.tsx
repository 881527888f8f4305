import { Page } from "../ui";
export function AnalyticsPage() {
  return <Page title="Analytics"><p>Coming soon.</p></Page>;
}
