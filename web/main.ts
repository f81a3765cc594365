// The nonce hook must run before xterm creates its style elements.
import './csp-nonce.js';
import '@xterm/xterm/css/xterm.css';
import './styles.css';
import { App } from './app.js';
import { askToken } from './dialogs.js';
import { saveToken, takeToken } from './token-store.js';

async function start(): Promise<void> {
  const root = document.getElementById('app');
  if (!root) return;
  const app = new App(root);
  let token = takeToken();
  while (!token) {
    token = await askToken();
  }
  saveToken(token);
  app.connect(token);
}

void start();
