import { Page } from "../ui";
export function WebhooksPage() {
  return <Page title="Webhooks"><p>Coming soon.</p></Page>;
}
