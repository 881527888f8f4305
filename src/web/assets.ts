// The dashboard's built files. The macro runs when this file is transpiled: at `bun build --compile`
// the bundle is inlined into the binary; from source it is built once per process, on first use
// (src/web/index.ts imports this file lazily so it never slows the start).
import { bundleDashboard } from "./bundle" with { type: "macro" };

export const dashboard = bundleDashboard();
