package browsertest

import (
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/chromedp/chromedp"
)

// TestTokenFromFragment: the printed URL's #token= is taken by the page,
// removed from the address bar and kept in the tab's sessionStorage, so a
// reload goes on working; no request carries it in its URL or in a
// cookie, only in the Authorization header.
func TestTokenFromFragment(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Demo(), nil)
	tab := r.tab(b)
	if href := eval[string](r, tab, `location.href`); href != r.hs.URL+"/" {
		t.Errorf("address bar after load: %q", href)
	}
	if st := eval[string](r, tab, `sessionStorage.getItem("acphost-token")`); st != r.srv.Token() {
		t.Errorf("sessionStorage holds %q", st)
	}
	if c := eval[string](r, tab, `document.cookie`); c != "" {
		t.Errorf("cookies: %q", c)
	}
	r.do(tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	r.poll(tab, `document.getElementById("conn").textContent === "connected"`)
	r.send(tab, "list files")
	r.answer(tab, `.dialog.permission button[data-option="allow"]`)
	r.turnEnded(tab, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.answers {
		if strings.Contains(a, r.srv.Token()) {
			t.Errorf("a request carried the token in its URL: %s", a)
		}
		if strings.Contains(a, " 401 ") {
			t.Errorf("refused: %s", a)
		}
	}
}

// TestDialogInert: a dialog's buttons take no click in the moment it
// appears (here: in the very task that shows it), and no keyboard click
// whose key went down before it appeared; once armed, a key pressed on a
// button answers.
func TestDialogInert(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Demo(), nil)
	tab := r.tab(b)
	// As soon as the dialog is in the page: a mouse click on "allow".
	eval[bool](r, tab, `(() => {
		window.__early = 0;
		new MutationObserver((_, obs) => {
			const btn = document.querySelector('.dialog.permission button[data-option="allow"]');
			if (!btn) return;
			obs.disconnect();
			btn.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, detail: 1}));
			window.__early = 1;
		}).observe(document.getElementById("dialogs"), {childList: true, subtree: true});
		return true;
	})()`)
	r.send(tab, "list files")
	allow := `.dialog.permission button[data-option="allow"]`
	r.poll(tab, `window.__early === 1`)
	r.poll(tab, `!document.querySelector(".dialog.permission").classList.contains("inert")`)
	// Armed now; a keyboard-made click (detail 0) with no key pressed since
	// the dialog appeared is not the person's either.
	eval[bool](r, tab, `(document.querySelector('.dialog.permission button[data-option="allow"]').click(), true)`)
	if !eval[bool](r, tab, `document.querySelector(".dialog.permission") !== null && !document.querySelector(".dialog.permission button").disabled`) {
		t.Fatal("the dialog was answered by a click in its first moment or by a stale keyboard click")
	}
	for _, m := range r.agent.Received() {
		if strings.Contains(string(m.Raw), `"optionId"`) {
			t.Fatalf("answered: %s", m.Raw)
		}
	}
	if f := eval[string](r, tab, `document.activeElement.id`); f != "prompt" {
		t.Errorf("the focus moved to %q", f)
	}
	// A key pressed on the button now does answer.
	r.do(tab, chromedp.Focus(chromedp.CSS(allow)), chromedp.KeyEvent(" "))
	r.do(tab, chromedp.WaitNotPresent(chromedp.CSS(".dialog")))
	r.received(`"optionId":"allow"`)
	r.turnEnded(tab, 1)
}
