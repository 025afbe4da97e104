// DOM building without HTML parsing: every string becomes a text node (or a
// property value), never markup, so model output and user input cannot
// inject elements or scripts. Nothing in the console uses innerHTML.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    } else if (k === 'class') {
      el.className = String(v);
    } else if (k === 'value' && 'value' in el) {
      (el as HTMLInputElement).value = String(v);
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Node): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// A labelled form control: <label>text <control></label> keeps the two
// together for screen readers and for narrow layouts.
export function field(label: string, control: HTMLElement, hint?: string): HTMLLabelElement {
  return h('label', { class: 'field' }, h('span', { class: 'label' }, label), control,
           hint ? h('span', { class: 'hint' }, hint) : null);
}

export function input(attrs: Attrs = {}): HTMLInputElement {
  return h('input', { type: 'text', ...attrs });
}

export function button(text: string, onclick: () => void, attrs: Attrs = {}): HTMLButtonElement {
  return h('button', { type: 'button', ...attrs, onclick: (() => onclick()) as EventListener }, text);
}

export function select(options: Array<[string, string]>, attrs: Attrs = {}): HTMLSelectElement {
  const s = h('select', attrs);
  for (const [value, text] of options) s.appendChild(h('option', { value }, text));
  return s;
}

export function table(headers: string[], rows: Child[][], attrs: Attrs = {}): HTMLTableElement {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, ...headers.map(t => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows.map(r => h('tr', {}, ...r.map(c => h('td', {}, c))))));
}

// A status line for errors and notices (role=alert for errors so assistive
// technology announces them).
export function notice(kind: 'error' | 'info' | 'ok', text: string): HTMLElement {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}
