// xterm.js draws its theme and cell sizes into <style> elements it creates. The page's
// Content-Security-Policy allows styles from this origin and from elements carrying this
// response's nonce only, so every <style> created here is stamped with it; without it
// the browser drops those rules and the terminal is drawn black on black.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="orca-style-nonce"]');
  var nonce = meta ? meta.getAttribute("content") : "";
  var create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    var element = create.call(this, tag, options);
    if (nonce && String(tag).toLowerCase() === "style") {
      element.nonce = nonce;
    }
    return element;
  };
})();
