import { reevaluateContacts, sweepSegments } from "./membership";
import { stopRecounts } from "./recount";
import type { ModuleDef } from "../../http/module";
import { segmentRoutes } from "./routes";
import { eventUsage, fieldUsage, resetProjectSegments } from "./service";

export { segmentAudienceWhere } from "./members";
export { viewSegment, type SegmentView } from "./service";

/** Segments: CRUD, members, refresh/compute, tracked membership on contact writes, the sweep. */
export const segmentsModule: ModuleDef = {
  name: "segments",
  routes: segmentRoutes,
  provides: {
    contactsChanged: [reevaluateContacts],
    fieldUsage: [fieldUsage],
    eventUsage: [eventUsage],
    resetProject: [resetProjectSegments],
  },
  install(ctx) {
    ctx.schedules.every("segment-sweep", ctx.config.segmentSweepIntervalMs, () => sweepSegments(ctx));
  },
  stop: (ctx) => stopRecounts(ctx),
};
