/** A button-styled file chooser: hands the chosen file to onFile, then clears itself (the same file can be chosen again). */
export function FilePicker({ label, inputId, accept, className = "button", onFile }: { label: string; inputId: string; accept: string; className?: string; onFile: (file: File) => void }) {
  return (
    <label className={className} htmlFor={inputId}>
      {label}
      <input
        id={inputId}
        className="sr-only"
        type="file"
        accept={accept}
        onChange={(e) => {
          const file = e.target.files?.[0];
          if (file) onFile(file);
          e.target.value = "";
        }}
      />
    </label>
  );
}
