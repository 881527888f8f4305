import { Page } from "../ui";
export function SegmentsPage() {
  return <Page title="Segments"><p>Coming soon.</p></Page>;
}
export function SegmentPage({ id }: { id: string }) {
  return <Page title="Segment"><p>{id}</p></Page>;
}
