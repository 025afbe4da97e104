// The console's shell: hash routes (#/playground, #/dashboard, #/admin) so
// that the server serves one index.html, the API key field (memory only),
// and page switching (each page returns its cleanup: stop polling, abort).
import './style.css';
import { adminPage } from './admin';
import { dashboardPage } from './dashboard';
import { clear, h } from './dom';
import { playgroundPage } from './playground';
import { getApiKey, setApiKey } from './session';

const pages: Record<string, (root: HTMLElement) => () => void> = {
  playground: playgroundPage,
  dashboard: dashboardPage,
  admin: adminPage,
};

const main = document.getElementById('main')!;
let cleanup: (() => void) | null = null;

function route() {
  const name = window.location.hash.replace(/^#\/?/, '') || 'playground';
  const page = pages[name] ? name : 'playground';
  cleanup?.();
  clear(main);
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a[data-page]')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `Pagoda · ${page[0].toUpperCase()}${page.slice(1)}`;
  cleanup = pages[page](main);
}

function apiKeyField() {
  const holder = document.getElementById('apikey')!;
  const key = h('input', { type: 'password', id: 'api-key', autocomplete: 'off', placeholder: 'API key (if required)',
                           'aria-label': 'API key (kept in memory only)' });
  key.value = getApiKey();
  key.addEventListener('change', () => setApiKey(key.value));
  holder.appendChild(key);
}

// The skip link focuses the page's content without touching the hash (the router's).
document.querySelector('a.skip')?.addEventListener('click', (e) => { e.preventDefault(); main.focus(); });

apiKeyField();
window.addEventListener('hashchange', route);
route();
