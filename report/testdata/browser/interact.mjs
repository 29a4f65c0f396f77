// Opens a report page in Debian's chromium (headless) with playwright-core
// and uses its charts as a person would: drags across the first chart to
// zoom, presses the pan button, wheels over a chart, moves the mouse over
// a chart to read the shared cursor, double-clicks to see the whole dump.
// After each step it reads every chart's state (window.edrCharts: the uPlot
// instances) and prints, as JSON: console and page errors, requests that
// left the page (refused), the charts (signal, whether its data breaks the
// line somewhere: a null), and per step every chart's x range, cursor
// position and legend value.
//
//   node interact.mjs PAGE.html OUT.png [CHROMIUM]
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [page_, out, exe = "/usr/bin/chromium"] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "edr-report-chromium-"));
const result = { console: [], pageErrors: [], requests: [], charts: [], steps: {} };
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
  result.charts = await page.evaluate(() => (window.edrCharts || []).map((u) => ({
    signal: u.edrSignal,
    points: u.data[0].length,
    breaks: u.data[1].filter((v) => v === null).length,
    canvas: !!u.root.querySelector("canvas"),
  })));
  const state = () => page.evaluate(() => (window.edrCharts || []).map((u) => ({
    min: u.scales.x.min, max: u.scales.x.max,
    left: u.cursor.left, idx: u.cursor.idx,
    value: (u.root.querySelectorAll(".u-legend .u-value")[1] || {}).textContent || "",
  })));
  result.steps.initial = await state();
  const over = await page.$(".uchart .u-over");
  if (over) {
    await over.scrollIntoViewIfNeeded();
    const b = await over.boundingBox();
    // zoom: drag from 40% to 60% of the first chart's width
    await page.mouse.move(b.x + b.width * 0.4, b.y + b.height / 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width * 0.5, b.y + b.height / 2, { steps: 5 });
    await page.mouse.move(b.x + b.width * 0.6, b.y + b.height / 2, { steps: 5 });
    await page.mouse.up();
    result.steps.zoomed = await state();
    // pan: the toolbar's button
    await page.click("#edr-pan-right");
    result.steps.panned = await state();
    // wheel over the chart: zoom out around the cursor
    await page.mouse.move(b.x + b.width * 0.5, b.y + b.height / 2);
    await page.mouse.wheel(0, 200);
    await page.waitForTimeout(50);
    result.steps.wheeled = await state();
    // the shared cursor: the mouse over the first chart, every chart reads
    await page.click("#edr-reset");
    await page.mouse.move(b.x + b.width * 0.5, b.y + b.height / 2);
    await page.mouse.move(b.x + b.width * 0.52, b.y + b.height / 2, { steps: 3 });
    result.steps.cursor = await state();
    await page.screenshot({ path: out, fullPage: true });
  }
} catch (e) {
  result.pageErrors.push("driver: " + String(e));
} finally {
  if (ctx) await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
