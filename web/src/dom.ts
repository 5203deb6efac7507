// DOM helpers. Data (names, stack lines, values) only ever enters the page as textContent or an
// attribute value: never as HTML.
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K, cls?: string, text?: string, children: Node[] = []): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  for (const c of children) e.appendChild(c);
  return e;
}

export function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`missing #${id}`);
  return e as T;
}

export function clear(e: HTMLElement): void {
  while (e.firstChild) e.removeChild(e.firstChild);
}

export function swatch(color: string | null): HTMLSpanElement {
  const s = el("span", "swatch");
  if (color) {
    s.style.background = color;
    s.dataset.color = color;
  }
  return s;
}
