import { useRef } from "react";
import { api, pollJob } from "../api";
import { ErrorBanner, useAction } from "../ui";

/**
 * "Import CSV": uploads the chosen file to `endpoint` (multipart `file`), then follows the import job
 * at `${endpoint}/${jobId}` (onJob gets each state) and calls onDone when it has finished.
 */
export function CsvImportButton({ endpoint, inputId, onJob, onDone }: { endpoint: string; inputId: string; onJob: (j: any) => void; onDone: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const act = useAction();
  return (
    <>
      <label className="button" htmlFor={inputId}>
        Import CSV
        <input
          ref={input}
          id={inputId}
          className="sr-only"
          type="file"
          accept=".csv,text/csv"
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (!file) return;
            void act.run(async () => {
              const form = new FormData();
              form.set("file", file);
              const { jobId } = await api<{ jobId: string }>(endpoint, { form });
              await pollJob(`${endpoint}/${jobId}`, onJob);
              onDone();
            });
            e.target.value = "";
          }}
        />
      </label>
      {act.error && <ErrorBanner error={act.error} />}
    </>
  );
}
