// A bot for the Arschloch referee, on the Java kit (protocol: `referee protocol spec`).
// Edit the decisions below; `make` compiles the classes (see the Makefile), `referee bot
// check .` tries it.
//
// The kit's safety net: when a decision of yours is not allowed (a card you do not hold, the
// wrong number of cards, a pass when you lead) or throws, BotKit sends a safe legal choice
// instead, so the match goes on. It does not hide the mistake: it writes a line
// "botkit: replaced {...}" on stderr each time, `referee bot check` fails the bot, and
// `referee play` and the tournament pages warn. To see the referee's own verdict on a
// mistake (a forfeit that explains the move), set safetyNet = false while testing.
// Log with log(...) (stderr): stdout carries the protocol.
import java.util.List;

public class Bot extends BotKit {
    Bot() {
        name = "my-bot";
        version = "0.1";
        safetyNet = true; // false: a mistake forfeits the match, with the referee's explanation
    }

    /** The lowest legal play: legal runs low to high, the pass [] last. */
    @Override
    public List<String> onPlay(GameState state) {
        for (List<String> play : state.legal) {
            if (!play.isEmpty()) return play;
        }
        return List.of();
    }

    // onGive (give back the lowest cards) and onLeftover (take the highest offered card,
    // discard the lowest) keep the kit's defaults; override them like onPlay.

    public static void main(String[] args) {
        new Bot().run();
    }
}
