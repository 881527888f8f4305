/**
 * Curated domain lists for /v1/verify that no maintained npm package covers well.
 * Disposable domains come from `disposable-email-domains-js`; typos from `@zootools/email-spell-checker`.
 */

/** Free mailbox providers people use for personal mail (not company domains). */
export const PERSONAL_DOMAINS = new Set([
  // Google, Microsoft, Apple, Yahoo, AOL
  "gmail.com", "googlemail.com",
  "outlook.com", "outlook.de", "outlook.fr", "outlook.es", "outlook.it", "outlook.jp", "outlook.co.uk",
  "hotmail.com", "hotmail.co.uk", "hotmail.fr", "hotmail.de", "hotmail.it", "hotmail.es", "hotmail.nl", "hotmail.ca",
  "live.com", "live.co.uk", "live.fr", "live.de", "live.nl", "live.it", "live.ca", "msn.com", "passport.com",
  "icloud.com", "me.com", "mac.com",
  "yahoo.com", "yahoo.co.uk", "yahoo.fr", "yahoo.de", "yahoo.es", "yahoo.it", "yahoo.ca", "yahoo.com.au", "yahoo.co.jp",
  "yahoo.co.in", "yahoo.com.br", "ymail.com", "rocketmail.com",
  "aol.com", "aol.co.uk", "aol.de", "aol.fr", "aim.com", "verizon.net",
  // Privacy-focused and independent
  "proton.me", "protonmail.com", "protonmail.ch", "pm.me", "tutanota.com", "tutanota.de", "tuta.io", "tuta.com",
  "fastmail.com", "fastmail.fm", "hey.com", "zoho.com", "zohomail.com", "mailbox.org", "posteo.de", "posteo.net",
  "runbox.com", "disroot.org", "mail.com", "email.com", "usa.com", "inbox.com",
  // Europe
  "gmx.com", "gmx.net", "gmx.de", "gmx.at", "gmx.ch", "gmx.fr", "gmx.co.uk", "web.de", "t-online.de", "freenet.de",
  "orange.fr", "wanadoo.fr", "free.fr", "laposte.net", "sfr.fr", "libero.it", "virgilio.it", "tiscali.it", "alice.it",
  "btinternet.com", "sky.com", "virginmedia.com", "talktalk.net", "ntlworld.com", "seznam.cz", "centrum.cz",
  "wp.pl", "o2.pl", "onet.pl", "interia.pl", "op.pl", "ukr.net", "abv.bg", "telenet.be", "skynet.be", "ziggo.nl", "kpnmail.nl",
  // Russia and CIS
  "yandex.ru", "yandex.com", "yandex.ua", "yandex.by", "yandex.kz", "ya.ru", "mail.ru", "inbox.ru", "list.ru", "bk.ru", "internet.ru", "rambler.ru",
  // Asia and elsewhere
  "qq.com", "163.com", "126.com", "yeah.net", "sina.com", "sohu.com", "aliyun.com", "naver.com", "hanmail.net", "daum.net",
  "rediffmail.com", "bol.com.br", "uol.com.br", "terra.com.br",
  // North American ISPs
  "comcast.net", "att.net", "sbcglobal.net", "bellsouth.net", "cox.net", "charter.net", "earthlink.net", "optonline.net",
  "shaw.ca", "rogers.com", "sympatico.ca", "telus.net", "optusnet.com.au", "bigpond.com", "xtra.co.nz",
]);

/** Alias and forwarding services: the mailbox behind the address is elsewhere (subdomains included). */
export const ALIAS_DOMAINS = new Set([
  "duck.com",
  "simplelogin.com", "simplelogin.co", "simplelogin.fr", "aleeas.com", "slmail.me", "8alias.com", "8shield.net",
  "anonaddy.com", "anonaddy.me", "addy.io",
  "mozmail.com", "relay.firefox.com",
  "privaterelay.appleid.com",
  "passmail.net", "passinbox.com",
  "33mail.com", "erine.email", "spamgourmet.com",
]);

/** Whether `domain` or one of its parent domains (at least two labels) is in `set`. */
export function inDomainSet(set: ReadonlySet<string>, domain: string): boolean {
  const labels = domain.split(".");
  for (let i = 0; i <= labels.length - 2; i++) if (set.has(labels.slice(i).join("."))) return true;
  return false;
}
