import type { ModuleDef } from "../../http/module";
import { emailRoutes } from "./routes";

/** The per-message log: GET /emails and GET /emails/:id. */
export const emailsModule: ModuleDef = { name: "emails", routes: emailRoutes };
