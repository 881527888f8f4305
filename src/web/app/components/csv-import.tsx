import { api, pollJob } from "../api";
import { ErrorBanner, useAction } from "../ui";
import { FilePicker } from "./file-picker";

/**
 * "Import CSV": uploads the chosen file to `endpoint` (multipart `file`), then follows the import job
 * at `${endpoint}/${jobId}` (onJob gets each state) and calls onDone when it has finished.
 */
export function CsvImportButton({ endpoint, inputId, onJob, onDone }: { endpoint: string; inputId: string; onJob: (j: any) => void; onDone: () => void }) {
  const act = useAction();
  return (
    <>
      <FilePicker label="Import CSV" inputId={inputId} accept=".csv,text/csv" onFile={(file) => void act.run(async () => {
        const form = new FormData();
        form.set("file", file);
        const { jobId } = await api<{ jobId: string }>(endpoint, { form });
        await pollJob(`${endpoint}/${jobId}`, onJob);
        onDone();
      })} />
      {act.error && <ErrorBanner error={act.error} />}
    </>
  );
}
