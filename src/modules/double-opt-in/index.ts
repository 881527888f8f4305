import type { ModuleDef } from "../../http/module";
import { doubleOptInRoutes } from "./routes";

/** Double opt-in: the confirmation page (the hold itself is in the events module's track path). */
export const doubleOptInModule: ModuleDef = { name: "double-opt-in", routes: doubleOptInRoutes };
