import { h } from './dom.js';

/** What the create form returns. */
export interface CreateRequest {
  host: string;
  command?: string;
  cwd?: string;
}

function field(label: string, input: HTMLElement): HTMLElement {
  return h('label', { class: 'field' }, h('span', {}, label), input);
}

/** A modal `<dialog>` with a form; resolves with the form's values, or undefined when cancelled. */
function modal<T>(
  title: string,
  fields: HTMLElement[],
  submitLabel: string,
  read: () => T | undefined,
): Promise<T | undefined> {
  return new Promise((resolve) => {
    const dialog = h('dialog', { class: 'modal', 'aria-label': title });
    const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    const form = h(
      'form',
      { method: 'dialog' },
      h('h2', {}, title),
      ...fields,
      h('div', { class: 'buttons' }, cancel, h('button', { type: 'submit', class: 'primary' }, submitLabel)),
    );
    let result: T | undefined;
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      result = read();
      if (result !== undefined) dialog.close();
    });
    cancel.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(result);
    });
    dialog.append(form);
    document.body.append(dialog);
    dialog.showModal();
  });
}

export function askToken(reason?: string): Promise<string | undefined> {
  const input = h('input', {
    type: 'password',
    name: 'token',
    autocomplete: 'off',
    required: true,
    spellcheck: 'false',
    'aria-label': 'Relay token',
  });
  const note = h(
    'p',
    { class: 'hint' },
    reason ?? 'The token is in ~/.config/ptyrelay/token on the relay machine (or $PTYRELAY_TOKEN).',
  );
  return modal(
    'Connect to the relay',
    [note, field('Token', input)],
    'Connect',
    () => input.value.trim() || undefined,
  );
}

export function askCreate(hosts: string[], host?: string): Promise<CreateRequest | undefined> {
  const select = h(
    'select',
    { name: 'host' },
    ...hosts.map((n) => h('option', { value: n, selected: n === host }, n)),
  );
  const command = h('input', {
    name: 'command',
    placeholder: 'login shell',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const cwd = h('input', {
    name: 'cwd',
    placeholder: 'home directory',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  return modal(
    'New terminal',
    [field('Host', select), field('Command (optional)', command), field('Directory (optional)', cwd)],
    'Create',
    () => {
      const r: CreateRequest = { host: select.value };
      if (command.value.trim()) r.command = command.value.trim();
      if (cwd.value.trim()) r.cwd = cwd.value.trim();
      return r;
    },
  );
}

export function askName(current: string): Promise<string | undefined> {
  const input = h('input', { name: 'name', value: current, autocomplete: 'off', maxlength: 200 });
  return modal('Rename terminal', [field('Name (empty: use the title)', input)], 'Rename', () => input.value);
}
