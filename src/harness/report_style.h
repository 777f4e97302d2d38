#pragma once
// The report's stylesheet, inline in every page (no network). Plain CSS: no '<' or '&', so the
// page stays well-formed XML without a CDATA section.

namespace ct {

inline constexpr const char* kReportCss = R"CSS(
:root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f4f5f7; --card: #ffffff;
        --pass: #15803d; --pass-bg: #dcfce7; --fail: #b91c1c; --fail-bg: #fee2e2; --accent: #2563eb; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1160px; margin: 0 auto; padding: 28px 24px 48px; }
header.top { display: flex; align-items: center; gap: 16px; flex-wrap: wrap; }
h1 { font-size: 26px; margin: 0; letter-spacing: -0.01em; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 0 0 12px; }
.subtitle { color: var(--muted); margin: 6px 0 20px; font-size: 13px; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 4px 12px; border-radius: 999px; font-weight: 700;
         font-size: 12px; letter-spacing: 0.06em; }
.badge.pass { background: var(--pass-bg); color: var(--pass); }
.badge.fail { background: var(--fail-bg); color: var(--fail); }
.badge.none { background: var(--line); color: var(--muted); }
.notes { background: #fffbeb; border: 1px solid #fcd34d; border-radius: 8px; padding: 10px 14px;
         margin-bottom: 18px; }
.notes p { margin: 2px 0; }
.cards { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px;
         margin-bottom: 18px; }
.card { background: var(--card); border-radius: 10px; padding: 12px 14px;
        box-shadow: 0 1px 2px rgba(0,0,0,0.06), 0 0 0 1px var(--line); }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: 0.05em; }
.card .value { font-size: 22px; font-weight: 700; margin-top: 2px; font-variant-numeric: tabular-nums; }
.card .sub { color: var(--muted); font-size: 12px; }
.card.hero .value { color: var(--accent); font-size: 28px; }
.card.bad .value { color: var(--fail); }
section { background: var(--card); border-radius: 12px; padding: 18px 20px; margin-bottom: 18px;
          box-shadow: 0 1px 2px rgba(0,0,0,0.06), 0 0 0 1px var(--line); }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 20px; }
.charts .wide { grid-column: 1 / -1; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; fill: var(--ink); }
svg.chart .chart-title { font-size: 14px; font-weight: 700; }
svg.chart .tick { font-size: 11px; fill: var(--muted); }
svg.chart .axis-label { font-size: 12px; fill: var(--muted); }
svg.chart .legend { font-size: 11.5px; }
svg.chart .chart-empty { font-size: 13px; fill: var(--muted); }
svg.chart .marker-label { font-size: 11px; fill: var(--muted); }
svg.chart .plot-bg { fill: #fbfbfc; }
svg.chart .grid { stroke: var(--line); stroke-width: 1; }
svg.chart .axis { stroke: #9ca3af; stroke-width: 1; }
svg.chart .marker { stroke: #9ca3af; stroke-width: 1.2; stroke-dasharray: 5 4; }
svg.chart .series { stroke-width: 1.8; stroke-linejoin: round; stroke-linecap: round; }
svg.chart .swatch { stroke-width: 3; }
svg.chart .dashed { stroke-dasharray: 6 4; }
svg.chart .nonfinite { stroke-width: 2; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th { text-align: left; color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase;
     letter-spacing: 0.04em; border-bottom: 2px solid var(--line); padding: 6px 8px; }
td { border-bottom: 1px solid var(--line); padding: 6px 8px; vertical-align: baseline; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.mono, .mono { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px;
                 overflow-wrap: anywhere; }
td.name { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; white-space: nowrap; }
tr.total td { font-weight: 700; border-top: 2px solid var(--line); }
.pill { display: inline-block; min-width: 52px; text-align: center; padding: 2px 8px; border-radius: 6px;
        font-weight: 700; font-size: 12px; }
.pill.pass { background: var(--pass-bg); color: var(--pass); }
.pill.fail { background: var(--fail-bg); color: var(--fail); }
.gate-summary { margin: 0 0 10px; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: 20px; }
pre { background: #f8fafc; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px;
      overflow-x: auto; font-size: 12px; line-height: 1.4; margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 0 0 12px; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
svg.bar { width: 140px; height: 14px; vertical-align: middle; }
footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 8px; }
@media (max-width: 800px) { .charts, .two { grid-template-columns: 1fr; } .cards { grid-template-columns: 1fr 1fr; } }
)CSS";

}  // namespace ct
