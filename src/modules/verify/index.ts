import type { ModuleDef } from "../../http/module";
import { verifyRoutes } from "./routes";

export { verifyEmail, type VerificationResult } from "./service";

export const verifyModule: ModuleDef = { name: "verify", routes: verifyRoutes };
