// Small DOM helpers: the page is plain DOM, no framework.

// h('td', { class: 'num', dataset: { id } }, 'text', child, …). Text children
// are text nodes, never parsed as HTML, so names from the API cannot inject markup.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'dataset') {
      for (const [name, data] of Object.entries(value)) if (data != null) el.dataset[name] = data;
    }
    else if (key === 'class') el.className = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, value);
  }
  el.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

// Replaces the children of `parent`, keeping keyboard focus: a focused control
// with a `data-key` is focused again in the new content (rows are redrawn on
// every change, and a redraw must not throw the user's focus away).
export function replaceKeepingFocus(parent, children) {
  const active = document.activeElement;
  const key = parent.contains(active) ? active?.dataset?.key : undefined;
  parent.replaceChildren(...children);
  if (key) parent.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

// A state badge: the state's text, coloured by class (never by colour alone).
export function badge(state, title) {
  return h('span', { class: `badge badge-${String(state).toLowerCase()}`, title }, state);
}

// Puts `text` on the clipboard; where the Clipboard API is unavailable (not a
// secure context) or refused, selects `source` so Ctrl+C copies it.
export async function copyText(text, source) {
  try {
    await navigator.clipboard.writeText(text);
    return 'Copied';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return 'Selected: press Ctrl+C';
  }
}

// A Copy button for the text shown in `pre`, announcing the outcome.
export function copyButton(pre, label, key) {
  const status = h('span', { class: 'copy-status', role: 'status' });
  const button = h(
    'button',
    {
      type: 'button',
      class: 'small',
      'aria-label': `Copy ${label}`,
      dataset: { key },
      onclick: async () => {
        status.textContent = await copyText(pre.textContent, pre);
        setTimeout(() => (status.textContent = ''), 3000);
      },
    },
    'Copy',
  );
  return h('span', { class: 'copy' }, button, status);
}

export function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString();
}
