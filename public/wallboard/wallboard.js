// The wallboard's client: follows GET /api/v1/events (server-sent events) and, on every event,
// fetches the service's state from /wallboard/state; times in state and waits tick every second.
// No framework, no build step.
'use strict';

(function () {
  const svcId = new URLSearchParams(location.search).get('svc-id') || '';
  const $ = (id) => document.getElementById(id);
  const STATE_LABEL = { free: 'Free', ringing: 'Ringing', call: 'On call', break: 'Break', wrapup: 'Wrap-up', logout: 'Logged out' };
  const STATE_ORDER = { ringing: 0, call: 1, wrapup: 2, free: 3, break: 4, logout: 5 };
  let current = null;
  let skew = 0; // server clock minus ours

  const serverNow = () => Date.now() + skew;
  function duration(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const ss = String(s % 60).padStart(2, '0');
    return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
  }
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  function renderAgents(agents) {
    const box = $('agents');
    const sorted = [...agents].sort((a, b) => STATE_ORDER[a.state] - STATE_ORDER[b.state] || a.since - b.since || a.id - b.id);
    box.replaceChildren(
      ...sorted.map((a) =>
        el(
          'article',
          { class: 'agent', 'data-agent-id': a.id, 'data-state': a.state },
          el('span', { class: 'name', title: a.name }, a.name),
          el('span', { class: 'time', 'data-since': a.since }, duration(serverNow() - a.since)),
          el('span', { class: 'state' }, a.state === 'break' && a.breakName ? a.breakName : STATE_LABEL[a.state]),
          el('span', { class: 'number' }, a.number),
        ),
      ),
    );
    if (agents.length === 0) box.replaceChildren(el('p', { class: 'empty' }, 'No agents provisioned.'));
    const n = (s) => agents.filter((a) => a.state === s).length;
    const summary = $('agent-summary');
    summary.replaceChildren();
    for (const [label, count] of [['free', n('free')], ['on call', n('call') + n('ringing')], ['break', n('break')], ['wrap-up', n('wrapup')]]) {
      if (summary.childNodes.length) summary.append(' · ');
      summary.append(el('b', {}, count), ` ${label}`);
    }
  }

  const ALERT_TEXT = {
    wait: (a) => `Wait over ${a.threshold} s`,
    serviceLevel: (a) => `Service level ${a.value}% < ${a.threshold}%`,
  };

  // Queues with their callers in the order they are served, each queue's expected wait and its live alerts.
  function renderQueues(queues, alerts) {
    let total = 0;
    $('queues').replaceChildren(
      ...queues.map((q) => {
        total += q.callers.length;
        const list = q.callers.length
          ? el(
              'ol',
              {},
              ...q.callers.map((c) =>
                el(
                  'li',
                  { class: c.callback ? 'caller callback' : 'caller', 'data-xnid': c.xnid, 'data-position': c.position },
                  el('span', { class: 'number' }, c.number),
                  c.priority > 0 ? el('span', { class: 'priority', title: 'customer priority' }, `P${c.priority}`) : '',
                  c.callback ? el('span', { class: 'tag', title: 'to be called back' }, 'callback') : '',
                  el('span', { class: 'wait', 'data-since': c.since }, duration(serverNow() - c.since)),
                ),
              ),
            )
          : el('p', { class: 'empty' }, 'Nobody waiting');
        const ewt = q.expectedWaitSeconds === null ? '—' : duration(q.expectedWaitSeconds * 1000);
        const mine = alerts.filter((a) => a.queueId === q.id);
        return el(
          'div',
          { class: mine.length ? 'queue alerting' : 'queue', 'data-queue-id': q.id },
          el('h3', {}, q.name, el('span', {}, `${q.callers.length} waiting`)),
          el('p', { class: 'queue-meta' }, 'expected wait ', el('b', { 'data-expected-wait': q.id }, ewt), ` · ${q.agentsFree} free`),
          ...mine.map((a) => el('p', { class: 'alert', 'data-alert': a.queueId, 'data-reason': a.reason }, ALERT_TEXT[a.reason] ? ALERT_TEXT[a.reason](a) : a.reason)),
          list,
        );
      }),
    );
    $('waiting-total').textContent = String(total);
  }

  function renderCounters(c) {
    for (const node of document.querySelectorAll('[data-counter]')) {
      const v = c[node.getAttribute('data-counter')];
      node.textContent = v === null || v === undefined ? '—' : String(v);
    }
  }

  function render(s) {
    current = s;
    skew = s.now - Date.now();
    document.title = `${s.service.name} · Wallboard`;
    $('service-name').textContent = s.service.name;
    $('service-meta').textContent = `service ${s.service.id} · ${s.service.timezone}`;
    renderCounters(s.counters);
    renderAgents(s.agents);
    renderQueues(s.queues, s.alerts || []);
    tick();
  }

  // Times in state and waits move every second without a request.
  function tick() {
    const now = serverNow();
    for (const node of document.querySelectorAll('[data-since]')) node.textContent = duration(now - Number(node.getAttribute('data-since')));
    for (const node of document.querySelectorAll('.caller:not(.callback)')) node.classList.toggle('late', now - Number(node.querySelector('.wait').getAttribute('data-since')) > 20000);
    if (current) $('clock').textContent = new Date(now).toLocaleTimeString([], { timeZone: current.service.timezone, hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }

  function problem(text) {
    const p = $('problem');
    p.hidden = !text;
    p.textContent = text || '';
  }

  // One refresh at a time; events that arrive meanwhile cause exactly one more.
  let running = false;
  let again = false;
  async function refresh() {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const res = await fetch(`/wallboard/state?svc-id=${encodeURIComponent(svcId)}`, { cache: 'no-store', credentials: 'same-origin' });
        if (!res.ok) {
          const body = await res.json().catch(() => ({}));
          problem(`${res.status}: ${body.message || res.statusText}`);
          break;
        }
        problem('');
        render(await res.json());
      } while (again);
    } catch (err) {
      problem(`cannot reach the platform: ${err.message}`);
    } finally {
      running = false;
    }
  }

  function live(on) {
    const l = $('live');
    l.setAttribute('data-live', on ? 'true' : 'false');
    l.querySelector('b').textContent = on ? 'live' : 'reconnecting';
  }

  const events = new EventSource(`/api/v1/events?svc-id=${encodeURIComponent(svcId)}`);
  events.addEventListener('open', () => {
    live(true);
    refresh();
  });
  events.addEventListener('error', () => live(false));
  events.addEventListener('call', refresh);
  events.addEventListener('agent', refresh);
  events.addEventListener('QueueAlert', refresh);
  events.addEventListener('QueueAlertCleared', refresh);
  setInterval(tick, 1000);
  refresh();
})();
