// Playwright (playwright-core) driving Debian's chromium package: never a downloaded browser.
// When /usr/bin/chromium is missing the tests fail with the command that installs it.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = process.env.MAILSVC_TEST_CHROMIUM ?? "/usr/bin/chromium";
export const SCREENSHOTS = join(import.meta.dir, "../../docs/screenshots");

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Browser tests need Debian's chromium at ${CHROMIUM}: run 'apt-get update && apt-get install -y chromium' (.ci/run does this when it is missing)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"],
  });
}

/** A new page on `baseURL`; with `cookie` ("name=value", an account's session) it is signed in as a login would leave it. */
export async function newPage(browser: Browser, baseURL: string, cookie?: string): Promise<Page> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1366, height: 800 } });
  if (cookie) {
    const [name, value] = cookie.split("=");
    await context.addCookies([{ name: name!, value: value!, url: baseURL }]);
  }
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  (page as any).__errors = errors;
  return page;
}

export async function screenshot(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

/** Uncaught errors the page threw (a test asserts there are none). */
export const pageErrors = (page: Page): string[] => (page as any).__errors;

/** Opens a dashboard route and waits until its main navigation shows. */
export async function openDashboard(page: Page, route: string): Promise<void> {
  await page.goto(route);
  await page.getByRole("navigation", { name: "Main" }).waitFor();
}
