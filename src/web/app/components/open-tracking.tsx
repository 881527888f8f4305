// The "Open tracking" field of the campaign and template editors: project default / on / off, and
// what the open pixel costs this message with SpamAssassin's local rules when it is too short to
// carry an image without looking image-only (src/mail/message/pixel-cost.ts), with a button to turn it off.
import { pixelCost } from "../../../mail/message/pixel-cost";
import { useSession } from "../session";
import { Notice, Select } from "../ui";

type MailType = "TRANSACTIONAL" | "MARKETING" | "HEADLESS";
type Choice = "default" | "on" | "off";

const toChoice = (v: boolean | null): Choice => (v === null ? "default" : v ? "on" : "off");
const fromChoice = (c: Choice): boolean | null => (c === "default" ? null : c === "on");

/** Whether the project's mode tracks this type (as the service decides: tracking.ts trackingApplies). */
function projectTracks(mode: string, type: MailType): boolean {
  if (mode === "DISABLED") return false;
  return mode === "MARKETING_ONLY" ? type !== "TRANSACTIONAL" : true;
}

/**
 * `inherited`: for a workflow step, its template's trackOpens (the step's null means the template's
 * setting, whose null is the project's).
 */
export function OpenTrackingField({ body, type, value, onChange, what, inherited }: { body: string; type: MailType; value: boolean | null; onChange: (v: boolean | null) => void; what: "campaign" | "template" | "workflow step"; inherited?: boolean | null }) {
  const project = useSession().project;
  const mode = project?.tracking ?? "MARKETING_ONLY";
  const byDefault = projectTracks(mode, type);
  const fallback = inherited ?? byDefault;
  const pixel = mode !== "DISABLED" && (value ?? fallback);
  const est = pixelCost({ body, type, publicUrl: location.origin, clickTracking: byDefault, postalAddress: project?.postalAddress });
  return (
    <>
      <Select
        label="Open tracking"
        value={toChoice(value)}
        onChange={(c) => onChange(fromChoice(c))}
        options={[
          { value: "default", label: `${inherited !== undefined ? "Template's setting" : "Project default"} (${fallback ? "on" : "off"})` },
          { value: "on", label: "On" },
          { value: "off", label: "Off" },
        ]}
      />
      {mode === "DISABLED" && value === true && <p className="hint">The project's tracking is disabled: no open pixel is added.</p>}
      {pixel && est.cost > 0 && est.withPixel && (
        <Notice kind="warn">
          <span data-testid="pixel-cost">
            Open tracking adds a 1×1 image. This message's HTML is about {est.length.toLocaleString("en")} bytes with it, and SpamAssassin's local rules score an
            image in an HTML part of at most 3,200 bytes as {est.withPixel.rule}: about <strong>+{est.withPixel.score.toFixed(1)} spam points</strong> from the pixel
            alone. Add about {est.missingBytes.toLocaleString("en")} bytes of content, or turn open tracking off for this {what} (clicks are still tracked).
          </span>{" "}
          <button type="button" className="small" onClick={() => onChange(false)}>Turn open tracking off</button>
        </Notice>
      )}
    </>
  );
}
