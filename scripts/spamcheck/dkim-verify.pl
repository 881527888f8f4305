#!/usr/bin/perl
# Second DKIM verifier for scripts/spamcheck.sh: Mail::DKIM (the Perl library SpamAssassin's DKIM
# plugin uses), asking the DNS server given as "host:port" (the generator's test DNS) for the keys.
# Reads one message on stdin; prints one line per signature: "<result> d=<domain> s=<selector> a=<algorithm>".
use strict;
use warnings;
use Mail::DKIM::Verifier;
use Mail::DKIM::DNS;
use Net::DNS::Resolver;

my ($host, $port) = split /:/, ($ARGV[0] // "127.0.0.1:53");
Mail::DKIM::DNS::resolver(Net::DNS::Resolver->new(nameservers => [$host], port => $port, recurse => 1, udp_timeout => 5, tcp_timeout => 5));
my $dkim = Mail::DKIM::Verifier->new();
binmode STDIN;
while (<STDIN>) {
  s/\r?\n\z//;
  $dkim->PRINT("$_\015\012");
}
$dkim->CLOSE;
my @sigs = $dkim->signatures;
print "none\n" unless @sigs;
printf "%s d=%s s=%s a=%s%s\n", $_->result, $_->domain, $_->selector, $_->algorithm, ($_->result eq "pass" ? "" : " (" . ($_->result_detail // "") . ")") for @sigs;
