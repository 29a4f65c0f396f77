// Opens a report page in Debian's chromium (headless) with playwright-core,
// takes a full-page screenshot and prints, as JSON: console errors and page
// errors, every request that left the page (none may: it must be
// self-contained, so they are refused and listed), the images and whether
// each decoded, and where the first signal plot and the timeline sit in the
// screenshot (CSS pixels = screenshot pixels at scale 1).
//
//   node shot.mjs PAGE.html OUT.png [CHROMIUM]
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [page_, out, exe = "/usr/bin/chromium"] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "edr-report-chromium-"));
const result = { console: [], pageErrors: [], requests: [], images: [], plot: null, timeline: null };
let ctx;
try {
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: exe,
    headless: true,
    viewport: { width: 1420, height: 900 },
    deviceScaleFactor: 1,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") result.console.push(`${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => result.pageErrors.push(String(e)));
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("file:") || url.startsWith("data:")) return route.continue();
    result.requests.push(url);
    return route.abort();
  });
  await page.goto(pathToFileURL(page_).href, { waitUntil: "load" });
  result.images = await page.$$eval("img", (imgs) => imgs.map((i) => ({ complete: i.complete, width: i.naturalWidth, height: i.naturalHeight })));
  const box = async (sel) => {
    const el = await page.$(sel);
    return el ? await el.boundingBox() : null;
  };
  // the plot area of the first signal chart: uPlot's, drawn by the page's
  // script (the SVG plot's when the script did not run)
  result.plot = (await box(".uchart .u-over")) ?? (await box("svg.signal rect.plotbg"));
  result.timeline = await box("svg.timeline rect.lanebg"); // the first lane's plot area
  await page.screenshot({ path: out, fullPage: true });
} catch (e) {
  result.pageErrors.push("driver: " + String(e));
} finally {
  if (ctx) await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
