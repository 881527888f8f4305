import { activityModule } from "./activity";
import { billingModule } from "./billing";
import { campaignsModule } from "./campaigns";
import { audienceCountModule } from "./audience-count";
import { analyticsModule } from "./analytics";
import { contactsModule } from "./contacts";
import { domainsModule } from "./domains";
import { emailsModule } from "./emails";
import { suppressionsModule } from "./suppressions";
import { doubleOptInModule } from "./double-opt-in";
import { eventsModule } from "./events";
import { metricsModule } from "./metrics";
import type { ModuleDef } from "../http/module";
import { projectRoutes } from "./projects/routes";
import { segmentsModule } from "../audience/segments";
import { sendModule } from "./send";
import { deliveryModule } from "./delivery";
import { systemRoutes } from "./system/routes";
import { templatesModule } from "./templates";
import { feedbackModule } from "./feedback";
import { sandboxModule } from "./sandbox";
import { submissionModule } from "./submission";
import { uploadsModule } from "./uploads";
import { userRoutes } from "./users/routes";
import { verifyModule } from "./verify";
import { workflowsModule } from "./workflows";
import { webModule } from "../web";
import { webhooksModule } from "../webhooks";

/** Every module of the service, in install order. */
export const MODULES: ModuleDef[] = [
  { name: "system", routes: systemRoutes },
  { name: "users", routes: userRoutes },
  { name: "projects", routes: projectRoutes },
  contactsModule,
  // Before events: stopping runs in reverse, so tracks drained by the events module are re-evaluated here.
  segmentsModule,
  eventsModule,
  domainsModule,
  templatesModule,
  verifyModule,
  sendModule,
  deliveryModule,
  campaignsModule,
  feedbackModule,
  sandboxModule,
  submissionModule,
  emailsModule,
  suppressionsModule,
  doubleOptInModule,
  activityModule,
  analyticsModule,
  metricsModule,
  workflowsModule,
  audienceCountModule,
  webhooksModule,
  webModule,
  billingModule,
  uploadsModule,
];
