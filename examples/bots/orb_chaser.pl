#!/usr/bin/env perl
# A tiny external bot in Perl (core modules only): gets behind the orb and pushes it.
#
# Speaks the cosmic-bot/1 protocol (docs/BOT_FORMAT.md): one handshake line, then one
# answer line per request. Run it as an opponent: exec:perl examples/bots/orb_chaser.pl
# Uses body-frame fields only (observation indices 27-29: orb minus own position,
# 36-38: goal to attack minus own position; forward, left, up), so it plays either colour.
use strict;
use warnings;
use JSON::PP;
use List::Util qw(min max);

my $BEHIND = 0.06;    # line up this far behind the orb (arena diagonals)
my $ON_LINE = 0.03;   # push once this close to the orb-to-goal line
my $json = JSON::PP->new->canonical;
$| = 1;               # flush every line: the host waits for each answer

sub clip { my ($v) = @_; return max(-1.0, min(1.0, $v)); }

sub decide {
    my ($obs) = @_;
    my @orb  = @{$obs}[27 .. 29];
    my @goal = @{$obs}[36 .. 38];
    my @line = map { $goal[$_] - $orb[$_] } 0 .. 2;
    my $norm = sqrt($line[0]**2 + $line[1]**2 + $line[2]**2) || 1.0;
    my @u = map { $_ / $norm } @line;    # unit vector orb -> goal, body frame
    my $ahead = $orb[0] * $u[0] + $orb[1] * $u[1] + $orb[2] * $u[2];
    my @off = map { -$orb[$_] + $ahead * $u[$_] } 0 .. 2;
    my $sign = ($ahead > 0 && sqrt($off[0]**2 + $off[1]**2 + $off[2]**2) < $ON_LINE) ? 1 : -1;
    my @target = map { $orb[$_] + $sign * $BEHIND * $u[$_] } 0 .. 2;
    my $bearing = atan2($target[1], $target[0]);
    my $thrust = abs($bearing) < 0.5 ? 1.0 : 0.3;
    return [$thrust, clip(3 * $target[1]), clip(8 * $target[2]), clip(3 * $bearing), 0.0, 0.0];
}

print $json->encode({
    protocol => "cosmic-bot/1", observation_size => 43, action_size => 6,
    decision_ticks => 8, name => "orb-chaser (perl)",
}), "\n";
while (my $line = <STDIN>) {    # ends when the host closes our stdin
    my $request = $json->decode($line);
    my @actions = map { decide($_) } @{ $request->{obs} };
    print $json->encode({ actions => \@actions }), "\n";
}
