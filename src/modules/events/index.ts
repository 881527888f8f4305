import type { ModuleDef } from "../module";

// Placeholder: this module is filled in by its issue.
export const eventsModule: ModuleDef = { name: "events" };
