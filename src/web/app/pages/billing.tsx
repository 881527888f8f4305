import { Page } from "../ui";
export function BillingPage() {
  return <Page title="Billing"><p>Coming soon.</p></Page>;
}
