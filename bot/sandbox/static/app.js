"use strict";
// The playground page: same slash syntax as the tests, replies drawn like Discord's dark theme.
(() => {
  const $ = (id) => document.getElementById(id);
  const log = $("log"), input = $("input"), form = $("form"), list = $("suggestions"), clientError = $("client-error");
  const guildSelect = $("guild"), localeSelect = $("locale");
  let meta = null, suggestions = [], active = -1, replaceFrom = 0, suggestSeq = 0;
  const rendered = new Map(); // message_id -> element, so component updates redraw in place

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // Minimal, escape-first markdown: ```code blocks```, **bold**, *italics*, `code`, [text](url) shown as text.
  function markdown(text) {
    const escaped = String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
    const blocks = [];
    const held = escaped.replace(/```(?:[a-z]*\n)?([\s\S]*?)```\n?/g, (_, body) => {
      blocks.push(body.replace(/\n$/, ""));
      return `\u0000${blocks.length - 1}\u0000`;
    });
    return inline(held).replace(/\u0000(\d+)\u0000/g, (_, i) => `<pre class="codeblock">${blocks[Number(i)]}</pre>`);
  }

  function inline(escaped) {
    return escaped
      .replace(/`([^`]+)`/g, "<code>$1</code>")
      .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>")
      .replace(/__([^_]+)__/g, "<u>$1</u>")
      .replace(/\[([^\]]+)\]\((https?:[^)]+)\)/g, "$1");
  }

  function md(tag, cls, text) {
    const node = el(tag, cls);
    node.innerHTML = markdown(text);
    return node;
  }

  function time() {
    return new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function fileUrl(reply, ref) {
    if (typeof ref !== "string") return null;
    if (!ref.startsWith("attachment://")) return ref.startsWith("http") || ref.startsWith("/") ? ref : null;
    const name = ref.slice("attachment://".length);
    const found = (reply.files || []).find((f) => f.filename === name);
    return found ? found.url : null;
  }

  function renderEmbed(reply, embed) {
    const box = el("div", "embed");
    if (embed.color !== undefined && embed.color !== null) {
      box.style.borderLeftColor = "#" + Number(embed.color).toString(16).padStart(6, "0");
    }
    if (embed.author && embed.author.name) box.appendChild(el("div", "embed-author", embed.author.name));
    if (embed.title) box.appendChild(md("div", "embed-title", embed.title));
    if (embed.description) box.appendChild(md("div", "embed-description", embed.description));
    if (embed.fields && embed.fields.length) {
      const fields = el("div", "embed-fields");
      for (const field of embed.fields) {
        const f = el("div", "field" + (field.inline ? " inline" : ""));
        f.appendChild(md("div", "field-name", field.name));
        f.appendChild(md("div", "field-value", field.value));
        fields.appendChild(f);
      }
      box.appendChild(fields);
    }
    const thumb = fileUrl(reply, embed.thumbnail && embed.thumbnail.url);
    if (thumb) {
      const t = el("div", "embed-thumbnail");
      const img = el("img");
      img.src = thumb; img.alt = "thumbnail";
      t.appendChild(img); box.appendChild(t);
    }
    const image = fileUrl(reply, embed.image && embed.image.url);
    if (image) {
      const wrap = el("div", "embed-image");
      const img = el("img");
      img.src = image; img.alt = embed.image.url;
      wrap.appendChild(img); box.appendChild(wrap);
    }
    if (embed.footer && embed.footer.text) box.appendChild(el("div", "embed-footer", embed.footer.text));
    return box;
  }

  function referencedFiles(reply) {
    const names = new Set();
    for (const embed of reply.embeds || []) {
      for (const ref of [embed.image && embed.image.url, embed.thumbnail && embed.thumbnail.url]) {
        if (typeof ref === "string" && ref.startsWith("attachment://")) names.add(ref.slice(13));
      }
    }
    return names;
  }

  function renderComponents(reply, body) {
    for (const row of reply.components || []) {
      const rowEl = el("div", "row");
      for (const item of row.components || []) {
        if (item.type !== 2) continue; // buttons only; selects are not drawn
        const button = el("button", "button s" + (item.style || 2), item.label || (item.emoji && item.emoji.name) || "");
        button.type = "button";
        button.disabled = !!item.disabled || item.style === 5 || !item.custom_id;
        button.dataset.customId = item.custom_id || "";
        button.addEventListener("click", () => click(reply, item.custom_id));
        rowEl.appendChild(button);
      }
      body.appendChild(rowEl);
    }
  }

  function messageShell(isBot, header) {
    const wrap = el("div", "message");
    if (header) {
      const bar = el("div", "reply-bar");
      bar.appendChild(el("span", "", header.user + " used "));
      bar.appendChild(el("span", "cmd", header.command));
      wrap.appendChild(el("div"));
      wrap.appendChild(bar);
    }
    const avatar = el("div", "avatar" + (isBot ? "" : " user"), isBot ? "R" : "T");
    const body = el("div", "body");
    const metaRow = el("div", "meta");
    metaRow.appendChild(el("span", "name", isBot ? (meta ? meta.bot.username : "bot") : "tester"));
    if (isBot) metaRow.appendChild(el("span", "bot-tag", "App"));
    metaRow.appendChild(el("span", "time", "Today at " + time()));
    body.appendChild(metaRow);
    wrap.appendChild(avatar);
    wrap.appendChild(body);
    return { wrap, body, metaRow, header };
  }

  function fillReply(shell, reply) {
    const { body, metaRow } = shell;
    if (reply.latency_ms !== null && reply.latency_ms !== undefined) {
      metaRow.appendChild(el("span", "latency", reply.latency_ms.toFixed(0) + " ms" + (reply.deferred ? " · deferred" : "")));
    }
    if (reply.timed_out) {
      body.appendChild(el("div", "error-text", "The application did not respond. " + (reply.reason || "")));
      return;
    }
    if (reply.error) {
      const text = reply.error.code === 10062 ? "The application did not respond" : "Discord rejected the reply";
      body.appendChild(el("div", "error-text", `${text} (${reply.error.status}, code ${reply.error.code}: ${reply.error.message})`));
      if (reply.error.errors) body.appendChild(el("pre", "error-text", JSON.stringify(reply.error.errors, null, 2)));
      return;
    }
    if (reply.choices) {
      body.appendChild(el("div", "content", "choices: " + reply.choices.map((c) => c.name).join(", ")));
      return;
    }
    if (reply.modal) {
      body.appendChild(el("div", "thinking", "opened a form: " + (reply.modal.title || "")));
      return;
    }
    if (reply.content) body.appendChild(md("div", "content", reply.content));
    for (const embed of reply.embeds || []) body.appendChild(renderEmbed(reply, embed));
    const inEmbeds = referencedFiles(reply);
    for (const file of reply.files || []) {
      if (inEmbeds.has(file.filename)) continue;
      const box = el("div", "attachment");
      if (/\.(png|jpe?g|gif|webp)$/i.test(file.filename) && file.url) {
        const img = el("img");
        img.src = file.url; img.alt = file.filename;
        box.appendChild(img);
      } else {
        const a = el("a", "", `${file.filename} (${file.bytes} bytes)`);
        a.href = file.url || "#"; a.download = file.filename;
        box.appendChild(a);
      }
      body.appendChild(box);
    }
    renderComponents(reply, body);
    if (reply.ephemeral) {
      const note = el("div", "ephemeral");
      note.appendChild(el("span", "", "Only you can see this • "));
      const dismiss = el("span", "dismiss", "Dismiss message");
      dismiss.addEventListener("click", () => shell.wrap.remove());
      note.appendChild(dismiss);
      body.appendChild(note);
    }
  }

  function scrollDown() { log.scrollTop = log.scrollHeight; }

  async function post(path, body) {
    const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  }

  function context() {
    return { locale: localeSelect.value, guild: guildSelect.value, admin: $("admin").checked };
  }

  async function send(command) {
    clientError.hidden = true;
    const shell = messageShell(true, { user: "tester", command: command.split(" ")[0] });
    const thinking = el("div", "thinking", (meta ? meta.bot.username : "bot") + " is thinking…");
    shell.body.appendChild(thinking);
    log.appendChild(shell.wrap); scrollDown();
    let reply;
    try {
      reply = await post("/playground/invoke", { command, ...context() });
    } catch (err) {
      thinking.remove();
      shell.body.appendChild(el("div", "error-text", String(err)));
      return;
    }
    thinking.remove();
    if (reply.rejected_by_client) {
      shell.wrap.remove();
      clientError.textContent = reply.reason;
      clientError.hidden = false;
      input.value = command;
      return;
    }
    fillReply(shell, reply);
    if (reply.message_id) rendered.set(reply.message_id, shell);
    scrollDown();
  }

  async function click(origin, customId) {
    const reply = await post("/playground/click", {
      interaction_id: origin.interaction_id, message_id: origin.message_id, custom_id: customId, locale: localeSelect.value, admin: $("admin").checked,
    });
    if (reply.rejected_by_client) { clientError.textContent = reply.reason; clientError.hidden = false; return; }
    const existing = reply.message_id && rendered.get(reply.message_id);
    if (existing && (reply.response_type === 7 || reply.response_type === 6)) {
      const fresh = messageShell(true, existing.header);
      fillReply(fresh, reply);
      existing.wrap.replaceWith(fresh.wrap);
      rendered.set(reply.message_id, fresh);
    } else {
      const shell = messageShell(true, { user: "tester", command: "clicked " + customId });
      fillReply(shell, reply);
      log.appendChild(shell.wrap);
      if (reply.message_id) rendered.set(reply.message_id, shell);
    }
    scrollDown();
  }

  function drawSuggestions(data) {
    suggestions = data.suggestions || [];
    replaceFrom = data.replace_from || 0;
    active = suggestions.length ? 0 : -1;
    list.innerHTML = "";
    if (!suggestions.length && !data.reason) { list.hidden = true; return; }
    const heading = el("li", "note", data.reason ? data.reason : data.from_bot ? "from " + (meta ? meta.bot.username : "the bot") : "suggestions");
    list.appendChild(heading);
    suggestions.forEach((s, i) => {
      const li = el("li", i === active ? "active" : "");
      li.setAttribute("role", "option");
      li.appendChild(el("span", "label", s.label));
      if (s.detail) li.appendChild(el("span", "detail", s.detail));
      li.addEventListener("mousedown", (e) => { e.preventDefault(); accept(i); });
      list.appendChild(li);
    });
    list.hidden = false;
  }

  function highlight() {
    [...list.querySelectorAll("li:not(.note)")].forEach((li, i) => li.classList.toggle("active", i === active));
  }

  function accept(index) {
    const s = suggestions[index];
    if (!s) return;
    input.value = input.value.slice(0, replaceFrom) + s.insert;
    list.hidden = true;
    input.focus();
    suggest();
  }

  let timer = null;
  function suggest() {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const seq = ++suggestSeq;
      const text = input.value;
      if (!text.startsWith("/")) { list.hidden = true; return; }
      try {
        const data = await post("/playground/autocomplete", { text, ...context() });
        if (seq === suggestSeq) drawSuggestions(data);
      } catch (err) { list.hidden = true; }
    }, 120);
  }

  input.addEventListener("input", () => { clientError.hidden = true; suggest(); });
  input.addEventListener("keydown", (e) => {
    if (list.hidden || !suggestions.length) return;
    if (e.key === "ArrowDown") { active = (active + 1) % suggestions.length; highlight(); e.preventDefault(); }
    else if (e.key === "ArrowUp") { active = (active - 1 + suggestions.length) % suggestions.length; highlight(); e.preventDefault(); }
    else if (e.key === "Tab") { accept(active); e.preventDefault(); }
    else if (e.key === "Escape") { list.hidden = true; }
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const command = input.value.trim();
    if (!command) return;
    list.hidden = true;
    input.value = "";
    send(command);
  });

  async function loadMeta() {
    const response = await fetch("/playground/meta");
    meta = await response.json();
    for (const g of meta.guilds) {
      const option = el("option", "", g.name); option.value = g.id; guildSelect.appendChild(option);
    }
    for (const l of meta.locales) {
      const option = el("option", "", l); option.value = l; localeSelect.appendChild(option);
    }
    $("admin").checked = Boolean(meta.admin);
    const status = $("status");
    status.textContent = meta.connected ? meta.bot.username + " online" : "bot not connected";
    status.classList.toggle("ok", meta.connected);
    guildSelect.addEventListener("change", () => {
      const g = meta.guilds.find((x) => x.id === guildSelect.value);
      $("channel-name").textContent = g ? g.name.toLowerCase().replace(/\s+/g, "-") : "general";
    });
  }

  window.playground = { send, click, ready: loadMeta() };
  input.focus();
})();
