// DOM and chart helpers for the console. Text goes in through textContent only: nothing the
// API returns is ever parsed as HTML.
const SVG = 'http://www.w3.org/2000/svg';

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== '' || k === 'required') e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
}

export function fmtTime(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 23)}Z`;
}

export function fmtAge(seconds) {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

// sparkline: a small SVG line chart of values (oldest first), scaled to its maximum.
export function sparkline(values, label, bad = false) {
  const w = 300, h = 60, max = Math.max(1, ...values);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('class', bad ? 'chart bad' : 'chart');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${label}: now ${values[values.length - 1]}, peak ${Math.max(...values)}`);
  const base = document.createElementNS(SVG, 'line');
  for (const [k, v] of Object.entries({ x1: 0, y1: h - 1, x2: w, y2: h - 1 })) base.setAttribute(k, v);
  const line = document.createElementNS(SVG, 'polyline');
  const step = values.length > 1 ? w / (values.length - 1) : w;
  line.setAttribute('points', values.map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / max) * (h - 6)).toFixed(1)}`).join(' '));
  const title = document.createElementNS(SVG, 'title');
  title.textContent = label;
  svg.append(title, base, line);
  return svg;
}
