import type { ModuleDef } from "../../http/module";
import { templateRoutes } from "./routes";
import { deleteProjectTemplates, templateCount } from "./service";

export { getTemplate, findTemplate, viewTemplate, type TemplateRow, type TemplateView } from "./service";

export const templatesModule: ModuleDef = {
  name: "templates",
  routes: templateRoutes,
  install(ctx) {
    ctx.hooks.setupState.push((c, projectId) => templateCount(c, projectId));
    ctx.hooks.resetProject.push((c, projectId) => deleteProjectTemplates(c, projectId));
  },
};
