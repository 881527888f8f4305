import { activityModule } from "./activity";
import { campaignsModule } from "./campaigns";
import { audienceCountModule } from "./audience-count";
import { contactsModule } from "./contacts";
import { domainsModule } from "./domains";
import { emailsModule } from "./emails";
import { eventsModule } from "./events";
import { metricsModule } from "./metrics";
import type { ModuleDef } from "./module";
import { projectRoutes } from "./projects/routes";
import { segmentsModule } from "./segments";
import { sendModule } from "./send";
import { systemRoutes } from "./system/routes";
import { templatesModule } from "./templates";
import { trackingModule } from "./tracking";
import { userRoutes } from "./users/routes";
import { verifyModule } from "./verify";
import { workflowsModule } from "./workflows";
import { webModule } from "../web";
import { webhooksModule } from "./webhooks";

/** Every module of the service, in install order. */
export const MODULES: ModuleDef[] = [
  { name: "system", routes: systemRoutes },
  { name: "users", routes: userRoutes },
  { name: "projects", routes: projectRoutes },
  contactsModule,
  eventsModule,
  domainsModule,
  templatesModule,
  segmentsModule,
  verifyModule,
  sendModule,
  campaignsModule,
  trackingModule,
  emailsModule,
  activityModule,
  metricsModule,
  workflowsModule,
  audienceCountModule,
  webhooksModule,
  webModule,
];
