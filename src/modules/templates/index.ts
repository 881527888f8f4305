import type { ModuleDef } from "../../http/module";
import { templateRoutes } from "./routes";
import { deleteProjectTemplates, templateCount } from "./service";

export { getTemplate, findTemplate, viewTemplate, type TemplateRow, type TemplateView } from "./service";

export const templatesModule: ModuleDef = {
  name: "templates",
  routes: templateRoutes,
  provides: {
    setupState: [(c, projectId) => templateCount(c, projectId)],
    resetProject: [(c, projectId) => deleteProjectTemplates(c, projectId)],
  },
};
