// Real-looking reports, modelled on what Postfix, Gmail, Exchange and mailbox-provider feedback
// loops send (structure, field order, folding and encodings as seen in the wild).
export interface Orig {
  emailId: string;
  to: string;
  from?: string;
  messageId?: string;
  returnPath?: string;
}

const crlf = (s: string) => s.replace(/\r?\n/g, "\r\n");
const rp = (o: Orig) => o.returnPath ?? `bounces+${o.emailId}@bounces.example.com`;
const mid = (o: Orig) => o.messageId ?? `<${o.emailId}@mailsvc.test>`;

function originalMessage(o: Orig): string {
  return `Return-Path: <${rp(o)}>
Received: from mailsvc.test (mailsvc.test [203.0.113.7])
\tby mx.example.net (Postfix) with ESMTPS id 4XyZ1s2tK9z9sRk
\tfor <${o.to}>; Mon, 13 May 2024 09:12:01 +0000 (UTC)
DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.com; s=mailsvc;
 h=from:to:subject:date:message-id; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;
 b=dGVzdA==
From: News <${o.from ?? "news@example.com"}>
To: ${o.to}
Subject: Our May newsletter
Date: Mon, 13 May 2024 09:12:00 +0000
Message-ID: ${mid(o)}
MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<p>Hello</p>
`;
}

/** Postfix: text part, message/delivery-status, message/rfc822 with the whole original. */
export function postfixBounce(o: Orig, opts: { status?: string; action?: string; diag?: string } = {}): string {
  return crlf(`Return-Path: <>
Received: by mx.example.net (Postfix)
\tid 4XyZ1s3Q2Vz9sRm; Mon, 13 May 2024 09:12:02 +0000 (UTC)
Date: Mon, 13 May 2024 09:12:02 +0000 (UTC)
From: MAILER-DAEMON@mx.example.net (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: ${rp(o)}
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
\tboundary="4XyZ1s3Q2Vz9sRm.1715591522/mx.example.net"
Message-Id: <20240513091202.4XyZ1s3Q2Vz9sRm@mx.example.net>

This is a MIME-encapsulated message.

--4XyZ1s3Q2Vz9sRm.1715591522/mx.example.net
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.net.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients. It's attached below.

<${o.to}>: host mx2.example.net[198.51.100.25] said: 550 5.1.1
    <${o.to}>: Recipient address rejected: User unknown in virtual mailbox
    table (in reply to RCPT TO command)

--4XyZ1s3Q2Vz9sRm.1715591522/mx.example.net
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net
X-Postfix-Queue-ID: 4XyZ1s3Q2Vz9sRm
X-Postfix-Sender: rfc822; ${rp(o)}
Arrival-Date: Mon, 13 May 2024 09:12:01 +0000 (UTC)

Final-Recipient: rfc822; ${o.to}
Original-Recipient: rfc822;${o.to}
Action: ${opts.action ?? "failed"}
Status: ${opts.status ?? "5.1.1"}
Remote-MTA: dns; mx2.example.net
Diagnostic-Code: smtp; ${opts.diag ?? `550 5.1.1 <${o.to}>: Recipient address rejected:
    User unknown in virtual mailbox table`}

--4XyZ1s3Q2Vz9sRm.1715591522/mx.example.net
Content-Description: Undelivered Message
Content-Type: message/rfc822

${originalMessage(o)}
--4XyZ1s3Q2Vz9sRm.1715591522/mx.example.net--
`);
}

/** Gmail-style: multipart/report with text/rfc822-headers of the original only. */
export function gmailBounce(o: Orig): string {
  return crlf(`Delivered-To: ${rp(o)}
Return-Path: <>
From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
To: ${rp(o)}
Auto-Submitted: auto-replied
Subject: Delivery Status Notification (Failure)
Message-ID: <6642e0c2.050a0220.b9f4e.1c1fSMTPIN_ADDED_MISSING@mx.google.com>
Date: Mon, 13 May 2024 02:12:02 -0700 (PDT)
MIME-Version: 1.0
Content-Type: multipart/report; boundary="000000000000c8e8a606185257f1"; report-type=delivery-status

--000000000000c8e8a606185257f1
Content-Type: multipart/related; boundary="000000000000c8ec1406185257f5"

--000000000000c8ec1406185257f5
Content-Type: multipart/alternative; boundary="000000000000c8ec1706185257f6"

--000000000000c8ec1706185257f6
Content-Type: text/plain; charset="UTF-8"
Content-Transfer-Encoding: quoted-printable

** Address not found **

Your message wasn't delivered to ${o.to} because the address couldn't be fo=
und, or is unable to receive mail.

--000000000000c8ec1706185257f6--
--000000000000c8ec1406185257f5--
--000000000000c8e8a606185257f1
Content-Type: message/delivery-status

Reporting-MTA: dns; googlemail.com
Received-From-MTA: dns; mailsvc.test
Arrival-Date: Mon, 13 May 2024 02:12:01 -0700 (PDT)
X-Original-Message-ID: ${mid(o)}

Final-Recipient: rfc822; ${o.to}
Action: failed
Status: 5.1.1
Remote-MTA: dns; gmail-smtp-in.l.google.com. (2a00:1450:400c:c0a::1b, the
 server for the domain gmail.com.)
Diagnostic-Code: smtp; 550-5.1.1 The email account that you tried to reach does
 not exist. 550 5.1.1 https://support.google.com/mail/?p=NoSuchUser
Last-Attempt-Date: Mon, 13 May 2024 02:12:02 -0700 (PDT)

--000000000000c8e8a606185257f1
Content-Type: text/rfc822-headers

Return-Path: <${rp(o)}>
From: News <${o.from ?? "news@example.com"}>
To: ${o.to}
Subject: Our May newsletter
Message-ID: ${mid(o)}

--000000000000c8e8a606185257f1--
`);
}

/** A delay warning (Postfix delay_warning_time). */
export function delayedDsn(o: Orig): string {
  return postfixBounce(o, { action: "delayed", status: "4.4.1", diag: "connect to mx2.example.net[198.51.100.25]:25: Connection timed out" });
}

/** ARF (RFC 5965) as sent by mailbox-provider feedback loops. */
export function arfReport(o: Orig, opts: { feedbackType?: string; originalMailFrom?: boolean; to?: string } = {}): string {
  return crlf(`From: Yahoo! Mail AntiSpam Feedback <feedback@arf.mail.yahoo.com>
To: ${opts.to ?? rp(o)}
Subject: FW: Our May newsletter
Date: Tue, 14 May 2024 11:02:45 +0000
Message-ID: <1715684565.28.yahoo.arf@arf.mail.yahoo.com>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
    boundary="_----------=_1715684565283910"

This is a multi-part message in MIME format.

--_----------=_1715684565283910
Content-Type: text/plain; charset="US-ASCII"
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP
203.0.113.7 on Mon, 13 May 2024 09:12:01 +0000.
For more information about this format please see
http://www.mipassoc.org/arf/.

--_----------=_1715684565283910
Content-Type: message/feedback-report

Feedback-Type: ${opts.feedbackType ?? "abuse"}
User-Agent: Yahoo!-Mail-Feedback/2.0
Version: 1
${opts.originalMailFrom === false ? "" : `Original-Mail-From: <${rp(o)}>\n`}Original-Rcpt-To: <${o.to}>
Arrival-Date: Mon, 13 May 2024 09:12:01 +0000
Source-IP: 203.0.113.7
Reported-Domain: example.com
Authentication-Results: mta1001.mail.gq1.yahoo.com; dkim=pass header.d=example.com

--_----------=_1715684565283910
Content-Type: message/rfc822
Content-Disposition: inline

${originalMessage({ ...o, to: "redacted@yahoo.com" })}
--_----------=_1715684565283910--
`);
}

/** A plain message (a reply, a customer writing in). */
export function plainMessage(opts: { from: string; to: string; subject: string; body?: string }): string {
  return crlf(`From: Jane Customer <${opts.from}>
To: <${opts.to}>
Subject: ${opts.subject}
Date: Tue, 14 May 2024 11:02:45 +0000
Message-ID: <CAF=abc123@mail.example.org>
In-Reply-To: <0191-some-earlier@mailsvc.test>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

${opts.body ?? "Hello, I have a question about my order."}
`);
}
