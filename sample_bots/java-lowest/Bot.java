// java-lowest: the "lowest" strategy in Java, on the Java kit (BotKit.java, a copy of
// protocol/kits/java/BotKit.java). Leads every card of its lowest rank, follows with the
// lowest rank that beats the table, passes otherwise; gives back its lowest cards and takes
// the highest leftover (the kit's defaults). `make` compiles it with the JDK's javac.
import java.util.List;

public class Bot extends BotKit {
    Bot() {
        name = "java-lowest";
        version = "1";
    }

    @Override
    public List<String> onPlay(GameState state) {
        int lowest = Integer.MAX_VALUE;
        for (List<String> play : state.legal) {
            if (!play.isEmpty()) lowest = Math.min(lowest, state.rankIndex(play.get(0)));
        }
        // When leading, legal has one entry per count of a rank: take the largest (the first
        // of the largest, as the Python and JavaScript samples do).
        List<String> best = List.of();
        for (List<String> play : state.legal) {
            if (!play.isEmpty() && state.rankIndex(play.get(0)) == lowest && play.size() > best.size()) {
                best = play;
            }
        }
        return best;
    }

    public static void main(String[] args) {
        new Bot().run();
    }
}
