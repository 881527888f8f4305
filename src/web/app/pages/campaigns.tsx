import { Page } from "../ui";
export function CampaignsPage() {
  return <Page title="Campaigns"><p>Coming soon.</p></Page>;
}
export function CampaignPage({ id }: { id: string }) {
  return <Page title="Campaign"><p>{id}</p></Page>;
}
