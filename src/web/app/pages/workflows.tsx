import { Page } from "../ui";
export function WorkflowsPage() {
  return <Page title="Workflows"><p>Coming soon.</p></Page>;
}
export function WorkflowPage({ id }: { id: string }) {
  return <Page title="Workflow"><p>{id}</p></Page>;
}
