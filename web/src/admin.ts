// Admin pages: tenants, keys (the secret shown once), limits, usage and cost
// with CSV export, batches with their progress and result files. Every action
// goes through the server's admin API (/admin/...) with the admin key, which
// is asked for once per page session and kept in memory only (session.ts);
// without it nothing here is reachable. Batches are the Files and Batch API's
// (/v1/batches) and use the API key.
import { admin, api, ApiError } from './api';
import { append, button, clear, field, h, input, notice, select, table } from './dom';
import { getAdminKey, getApiKey, setAdminKey } from './session';

interface Tenant { id: string; name: string; plan: string; weight: number; disabled: boolean; max_class: string | null;
  share_cache_across_keys: boolean; dedicated_deployment: string | null; default_class: string }
interface Key { id: string; tenant: string; name: string; models: string[]; status: string; created_at: number;
  expires_at: number | null; revoked_at: number | null; key?: string; replaces?: string }
interface Limit { scope: string; id: string; model: string; rpm: number; tpm: number; concurrent: number }
interface List<T> { data: T[] }
interface Batch { id: string; status: string; endpoint: string; created_at: number; output_file_id: string | null;
  error_file_id: string | null; request_counts: { total: number; completed: number; failed: number } }

const TABS = ['tenants', 'keys', 'limits', 'usage', 'batches'] as const;
const PLANS: Array<[string, string]> = [['serverless', 'serverless'], ['provisioned', 'provisioned'], ['dedicated', 'dedicated']];
const CLASSES: Array<[string, string]> = [['batch', 'batch'], ['interactive', 'interactive'], ['realtime', 'realtime']];
type Tab = typeof TABS[number];

function when(t: number | null | undefined): string {
  return t ? new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19) : '–';
}

// Saves `blob` as `name` through a temporary same-origin blob: URL.
function download(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function adminPage(root: HTMLElement): () => void {
  let tab: Tab = 'tenants';
  const status = h('div', { class: 'page-status', 'data-testid': 'admin-status' });
  const body = h('div', { class: 'admin-body' });
  const title = h('h1', { class: 'page-title' }, 'Admin');
  append(root, title, status, body);

  const report = (e: unknown) => {
    clear(status);
    status.appendChild(notice('error', e instanceof Error ? e.message : String(e)));
    // A refused admin key is dropped: the page asks for it again. (The
    // batches tab uses the API key: its 401s are not the admin key's.)
    if (e instanceof ApiError && e.status === 401 && tab !== 'batches') { setAdminKey(''); renderAll(); }
  };
  const ok = (text: string) => { clear(status); status.appendChild(notice('ok', text)); };
  const run = (f: () => Promise<void>) => () => { f().catch(report); };

  function renderLocked() {
    const key = input({ type: 'password', id: 'admin-key', autocomplete: 'off', 'aria-describedby': 'admin-key-hint' });
    const unlock = async () => {
      setAdminKey(key.value);
      key.value = '';
      try {
        await admin.get('/admin/tenants');
        clear(status);
        renderAll();
      } catch (e) {
        setAdminKey('');
        report(e);
      }
    };
    const form = h('form', { class: 'panel unlock', 'aria-labelledby': 'admin-unlock-h' },
      h('h2', { id: 'admin-unlock-h' }, 'Admin key'),
      field('Admin key', key),
      h('p', { id: 'admin-key-hint', class: 'hint' },
        'Kept in this tab\'s memory only (never stored); reloading the page forgets it.'),
      h('button', { type: 'submit', id: 'admin-unlock', class: 'primary' }, 'Unlock'));
    form.addEventListener('submit', (ev) => { ev.preventDefault(); void unlock(); });
    append(body, form);
    key.focus();
  }

  function renderAll() {
    clear(body);
    if (!getAdminKey()) { renderLocked(); return; }
    const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Admin sections' });
    for (const t of TABS) {
      tabs.appendChild(h('button', { type: 'button', role: 'tab', id: `admin-tab-${t}`, 'aria-selected': String(t === tab),
        'aria-controls': 'admin-panel', class: t === tab ? 'active' : '',
        onclick: (() => { tab = t; renderAll(); }) as EventListener }, t[0].toUpperCase() + t.slice(1)));
    }
    const panel = h('section', { id: 'admin-panel', role: 'tabpanel', 'aria-labelledby': `admin-tab-${tab}`, class: 'panel' });
    append(body, h('div', { class: 'row' }, tabs, button('Forget admin key', () => { setAdminKey(''); renderAll(); },
                                                          { id: 'admin-forget' })), panel);
    const views: Record<Tab, (p: HTMLElement) => Promise<void>> = { tenants, keys, limits, usage, batches };
    views[tab](panel).catch(report);
  }

  async function tenantOptions(): Promise<Array<[string, string]>> {
    const list = await admin.get<List<Tenant>>('/admin/tenants');
    return list.data.map(t => [t.id, `${t.id} (${t.name})`]);
  }

  async function tenants(p: HTMLElement) {
    const list = await admin.get<List<Tenant>>('/admin/tenants');
    const id = input({ id: 'tenant-id', placeholder: 'acme (optional)' });
    const name = input({ id: 'tenant-name', required: true });
    const plan = select(PLANS, { id: 'tenant-plan' });
    const create = run(async () => {
      const t = await admin.post<Tenant>('/admin/tenants', { ...(id.value ? { id: id.value } : {}), name: name.value,
                                                             plan: plan.value });
      ok(`Tenant ${t.id} created.`);
      renderAll();
    });
    const editBox = h('div', { class: 'edit-box', hidden: true });
    append(p, h('h2', {}, 'Tenants'),
      h('div', { class: 'table-wrap' }, table(['id', 'name', 'plan', 'weight', 'max class', 'state', ''],
        list.data.map(t => [t.id, t.name, t.plan, String(t.weight), t.max_class ?? 'plan', t.disabled ? 'disabled' : 'active',
          h('span', { class: 'row-actions' },
            button('Edit', () => editTenant(editBox, t), { 'data-edit-tenant': t.id, 'aria-label': `Edit ${t.id}` }),
            button(t.disabled ? 'Enable' : 'Disable', run(async () => {
              await admin.patch(`/admin/tenants/${encodeURIComponent(t.id)}`, { disabled: !t.disabled });
              ok(`Tenant ${t.id} ${t.disabled ? 'enabled' : 'disabled'}.`);
              renderAll();
            }), { 'aria-label': `${t.disabled ? 'Enable' : 'Disable'} ${t.id}` }))]), { 'data-testid': 'tenants' })),
      editBox,
      h('h3', {}, 'New tenant'),
      h('div', { class: 'form-row' }, field('id', id), field('name', name), field('plan', plan),
        button('Create tenant', create, { id: 'tenant-create', class: 'primary' })));
  }

  // The form that edits what PATCH /admin/tenants/{id} may change (the id
  // stays); only the fields that differ from `t` are sent.
  function editTenant(box: HTMLElement, t: Tenant) {
    const name = input({ id: 'edit-tenant-name', value: t.name });
    const plan = select(PLANS, { id: 'edit-tenant-plan' });
    plan.value = t.plan;
    const weight = input({ type: 'number', id: 'edit-tenant-weight', min: 0, step: 'any', value: String(t.weight) });
    const share = input({ type: 'checkbox', id: 'edit-tenant-share-cache', checked: t.share_cache_across_keys });
    const dedicated = input({ id: 'edit-tenant-dedicated', value: t.dedicated_deployment ?? '',
                              placeholder: 'model@version' });
    const maxClass = select([['', 'the plan\'s'], ...CLASSES], { id: 'edit-tenant-max-class' });
    maxClass.value = t.max_class ?? '';
    const defaultClass = select(CLASSES, { id: 'edit-tenant-default-class' });
    defaultClass.value = t.default_class;
    const save = run(async () => {
      const w = Number(weight.value);
      if (!name.value.trim()) throw new Error('Tenant name: must not be empty.');
      if (weight.value === '' || !Number.isFinite(w) || w <= 0) throw new Error('Tenant weight: a number above 0.');
      const want: Record<string, unknown> = {
        name: name.value, plan: plan.value, weight: w, share_cache_across_keys: share.checked,
        dedicated_deployment: dedicated.value.trim(), max_class: maxClass.value || null, default_class: defaultClass.value };
      const have: Record<string, unknown> = { ...t, dedicated_deployment: t.dedicated_deployment ?? '' };
      const patch = Object.fromEntries(Object.entries(want).filter(([k, v]) => v !== have[k]));
      if (!Object.keys(patch).length) { ok(`Tenant ${t.id}: nothing changed.`); return; }
      await admin.patch(`/admin/tenants/${encodeURIComponent(t.id)}`, patch);
      ok(`Tenant ${t.id} updated (${Object.keys(patch).join(', ')}).`);
      renderAll();
    });
    clear(box);
    box.hidden = false;
    append(box, h('h3', {}, `Edit tenant ${t.id}`),
      h('div', { class: 'form-row' }, field('name', name), field('plan', plan), field('weight', weight),
        field('dedicated deployment', dedicated, 'for the dedicated plan'), field('max class', maxClass),
        field('default class', defaultClass)),
      h('label', { class: 'check' }, share, ' Share the prefix cache across the tenant\'s keys'),
      h('div', { class: 'row' }, button('Save', save, { id: 'edit-tenant-save', class: 'primary' }),
        button('Cancel', () => { clear(box); box.hidden = true; }, { id: 'edit-tenant-cancel' })));
    name.focus();
  }

  async function keys(p: HTMLElement) {
    const options = await tenantOptions();
    const filter = select([['', 'all tenants'], ...options], { id: 'keys-filter', 'aria-label': 'Tenant' });
    const holder = h('div', { class: 'table-wrap' });
    const secretBox = h('div', { class: 'secret-box', hidden: true, 'aria-live': 'assertive' });
    const grace = input({ type: 'number', id: 'key-rotate-grace', min: 0, max: 2592000, step: 1, value: '0' });
    // The only time a secret exists outside the client that asked: shown
    // here once, gone when the box is dismissed or the page changes.
    const showSecret = (k: Key, text: string) => {
      clear(secretBox);
      secretBox.hidden = false;
      const secret = h('code', { 'data-testid': 'new-key-secret', tabindex: 0 }, k.key ?? '');
      append(secretBox, h('p', {}, text), secret,
        button('Done', () => { clear(secretBox); secretBox.hidden = true; }, { id: 'key-secret-done' }));
    };
    // A new key with the old one's tenant, name, scope and expiry; the old
    // one revoked in the same transaction, or (grace) ending that much later.
    const rotate = (k: Key) => run(async () => {
      const g = grace.value === '' ? 0 : Number(grace.value);
      if (!Number.isInteger(g) || g < 0 || g > 2592000) {
        throw new Error('Rotation grace: whole seconds from 0 to 2592000 (30 days).');
      }
      const fresh = await admin.post<Key>(`/admin/keys/${encodeURIComponent(k.id)}/rotate`, { grace_seconds: g });
      showSecret(fresh, `Key ${fresh.id} replaces ${fresh.replaces ?? k.id} (${g ? `which stops working in ${g} s` : 'revoked'}). ` +
                        'Its secret is shown this once:');
      ok(`Key ${k.id} rotated to ${fresh.id}.`);
      await load();
    });
    const load = async () => {
      const q = filter.value ? `?tenant=${encodeURIComponent(filter.value)}` : '';
      const list = await admin.get<List<Key>>(`/admin/keys${q}`);
      clear(holder);
      holder.appendChild(table(['id', 'tenant', 'name', 'models', 'status', 'created', 'expires', ''],
        list.data.map(k => [k.id, k.tenant, k.name, k.models.length ? k.models.join(', ') : 'all', k.status,
          when(k.created_at), when(k.expires_at),
          k.status === 'active' ? h('span', { class: 'row-actions' },
            button('Rotate', rotate(k), { 'data-rotate-key-id': k.id, 'aria-label': `Rotate ${k.id}` }),
            button('Revoke', run(async () => {
              await admin.post(`/admin/keys/${encodeURIComponent(k.id)}/revoke`);
              ok(`Key ${k.id} revoked.`);
              await load();
            }), { 'data-key-id': k.id, 'aria-label': `Revoke ${k.id}` })) : '']), { 'data-testid': 'keys' }));
    };
    filter.addEventListener('change', run(load));
    const tenant = select(options, { id: 'key-tenant' });
    const name = input({ id: 'key-name' });
    const models = input({ id: 'key-models', placeholder: 'all models' });
    const ttl = input({ type: 'number', id: 'key-ttl', min: 0, placeholder: 'never expires' });
    const create = run(async () => {
      const req: Record<string, unknown> = { tenant: tenant.value };
      if (name.value) req.name = name.value;
      const m = models.value.split(',').map(s => s.trim()).filter(Boolean);
      if (m.length) req.models = m;
      if (ttl.value) req.ttl_seconds = Number(ttl.value);
      const k = await admin.post<Key>('/admin/keys', req);
      showSecret(k, `Key ${k.id} created. Its secret is shown this once:`);
      ok(`Key ${k.id} created.`);
      await load();
    });
    append(p, h('h2', {}, 'API keys'),
      h('div', { class: 'row' }, field('Tenant', filter),
        field('Rotation grace (s)', grace, 'how long a rotated key keeps working; 0 revokes it at once')),
      secretBox, holder,
      h('h3', {}, 'New key'),
      h('div', { class: 'form-row' }, field('tenant', tenant), field('name', name),
        field('models (scope)', models, 'comma-separated; empty = all'), field('TTL seconds', ttl),
        button('Create key', create, { id: 'key-create', class: 'primary' })));
    await load();
  }

  async function limits(p: HTMLElement) {
    const options = await tenantOptions();
    const filter = select([['', 'all tenants'], ...options], { id: 'limits-filter', 'aria-label': 'Tenant' });
    const holder = h('div', { class: 'table-wrap' });
    const load = async () => {
      const q = filter.value ? `?tenant=${encodeURIComponent(filter.value)}` : '';
      const list = await admin.get<List<Limit>>(`/admin/limits${q}`);
      const n = (v: number) => (v ? String(v) : 'unlimited');
      clear(holder);
      holder.appendChild(table(['scope', 'id', 'model', 'rpm', 'tpm', 'concurrent', ''],
        list.data.map(l => [l.scope, l.id, l.model || '*', n(l.rpm), n(l.tpm), n(l.concurrent),
          button('Delete', run(async () => {
            await admin.del(`/admin/limits?scope=${l.scope}&id=${encodeURIComponent(l.id)}&model=${encodeURIComponent(l.model)}`);
            ok('Limit deleted.');
            await load();
          }), { 'aria-label': `Delete limit ${l.scope} ${l.id} ${l.model || '*'}` })]), { 'data-testid': 'limits' }));
    };
    filter.addEventListener('change', run(load));
    const scope = select([['tenant', 'tenant'], ['key', 'key']], { id: 'limit-scope' });
    const id = input({ id: 'limit-id', placeholder: 'tenant or key id' });
    const model = input({ id: 'limit-model', placeholder: 'any model' });
    const rpm = input({ type: 'number', id: 'limit-rpm', min: 0 });
    const tpm = input({ type: 'number', id: 'limit-tpm', min: 0 });
    const conc = input({ type: 'number', id: 'limit-concurrent', min: 0 });
    const set = run(async () => {
      const req: Record<string, unknown> = { scope: scope.value, id: id.value, model: model.value };
      if (rpm.value) req.rpm = Number(rpm.value);
      if (tpm.value) req.tpm = Number(tpm.value);
      if (conc.value) req.concurrent = Number(conc.value);
      await admin.put('/admin/limits', req);
      ok('Limit set.');
      await load();
    });
    append(p, h('h2', {}, 'Limits'), h('div', { class: 'row' }, field('Tenant', filter)), holder,
      h('h3', {}, 'Set a limit'),
      h('div', { class: 'form-row' }, field('scope', scope), field('id', id), field('model', model), field('rpm', rpm),
        field('tpm', tpm), field('concurrent', conc), button('Set limit', set, { id: 'limit-set', class: 'primary' })));
    await load();
  }

  async function usage(p: HTMLElement) {
    const groups = ['tenant', 'model', 'day', 'key', 'service_tier'];
    const boxes = groups.map(g => input({ type: 'checkbox', id: `usage-by-${g}`, checked: g !== 'key' && g !== 'service_tier' }));
    const from = input({ type: 'date', id: 'usage-from' });
    const to = input({ type: 'date', id: 'usage-to' });
    const holder = h('div', { class: 'table-wrap' });
    const query = (format: string) => {
      const by = groups.filter((_, i) => boxes[i].checked);
      const q = new URLSearchParams({ group_by: by.length ? by.join(',') : 'none', format });
      if (from.value) q.set('from', from.value);
      if (to.value) q.set('to', to.value);
      return `/admin/usage?${q}`;
    };
    const load = async () => {
      const r = await admin.get<{ rows: Array<Record<string, unknown>>; total: Record<string, unknown> }>(query('json'));
      const by = groups.filter((_, i) => boxes[i].checked).map(g => (g === 'tenant' ? 'tenant_id' : g === 'key' ? 'key_id' : g));
      const cols = [...by, 'requests', 'errors', 'prompt_tokens', 'cached_tokens', 'completion_tokens', 'cost'];
      const cell = (row: Record<string, unknown>, c: string) =>
        c === 'cost' && typeof row[c] === 'number' ? (row[c] as number).toFixed(4) : String(row[c] ?? '');
      clear(holder);
      holder.appendChild(table(cols, [...r.rows.map(row => cols.map(c => cell(row, c))),
        cols.map((c, i) => (i === 0 ? 'TOTAL' : by.includes(c) ? '' : cell(r.total, c)))], { 'data-testid': 'usage' }));
    };
    const csv = run(async () => {
      const text = await admin.get<string>(query('csv'));
      download(new Blob([text], { type: 'text/csv' }), 'pagoda-usage.csv');
      ok('Usage exported as CSV.');
    });
    append(p, h('h2', {}, 'Usage and cost'),
      h('fieldset', { class: 'form-row' }, h('legend', {}, 'Group by'),
        ...groups.map((g, i) => h('label', { class: 'check' }, boxes[i], ` ${g}`))),
      h('div', { class: 'form-row' }, field('from', from), field('to', to),
        button('Show', run(load), { id: 'usage-show', class: 'primary' }), button('Export CSV', csv, { id: 'usage-csv' })),
      holder);
    await load();
  }

  async function batches(p: HTMLElement) {
    append(p, h('h2', {}, 'Batches'),
      h('p', { class: 'hint' }, 'The Batch API lists the batches of the API key entered at the top of the page.'));
    let list: List<Batch>;
    try {
      list = await api.get<List<Batch>>('/v1/batches?limit=100');
    } catch (e) {
      p.appendChild(notice('error', `Batches: ${(e as Error).message}${getApiKey() ? '' : ' (no API key entered)'}`));
      return;
    }
    const file = (id: string | null, label: string) => (id ? button(label, run(async () => {
      const r = await fetch(`/v1/files/${encodeURIComponent(id)}/content`,
                            { headers: getApiKey() ? { authorization: `Bearer ${getApiKey()}` } : {} });
      if (!r.ok) throw new ApiError(r.status, `HTTP ${r.status} for file ${id}`);
      download(await r.blob(), `${id}.jsonl`);
    })) : '–');
    p.appendChild(h('div', { class: 'table-wrap' }, table(['id', 'status', 'endpoint', 'created', 'progress', 'output', 'errors'],
      list.data.map(b => {
        const done = b.request_counts.completed + b.request_counts.failed;
        const total = b.request_counts.total;
        return [b.id, b.status, b.endpoint, when(b.created_at),
          h('span', {}, h('progress', { max: total || 1, value: done, 'aria-label': `${b.id} progress` }),
            ` ${done} / ${total}${b.request_counts.failed ? ` (${b.request_counts.failed} failed)` : ''}`),
          file(b.output_file_id, 'Output'), file(b.error_file_id, 'Errors')];
      }), { 'data-testid': 'batches' })));
  }

  renderAll();
  return () => {};
}
