// BotKit.java: a small base for Arschloch / Président bots speaking protocol v1 (Java 17).
//
// Copy this one file next to your bot; it uses only the JDK. Extend BotKit, override the
// decisions you care about, and call run():
//
//   public class Bot extends BotKit {
//       @Override public List<String> onPlay(GameState state) {
//           return state.leading() ? List.of(state.sortCards(state.hand).get(0)) : List.of();
//       }
//       public static void main(String[] args) { new Bot().run(); }
//   }
//
// run() reads one JSON message per line from stdin (BufferedReader.readLine, a line at a
// time), keeps a GameState up to date, calls your methods when the referee asks for a
// decision, writes one reply line per request and flushes it at once, and returns on "bye"
// or end of input. Unknown message types and fields are ignored. The kit keeps the real
// stdout to itself and points System.out at stderr, so a debug System.out.println cannot
// break the protocol; log with log() (stderr).
//
// The safety net: if a decision throws, or returns cards that are not a legal play, the kit
// answers with a safe legal choice instead, so a bug costs a bad move, not a forfeit. It
// never hides the bug: each time it writes one marker line on stderr (MARKER, then a JSON
// object; protocol/SPEC.md, "the kits' safety net"), which the referee counts: `referee bot
// check` fails a bot whose decisions were replaced. Set safetyNet = false to get the
// referee's own verdict (a forfeit that explains the move) while testing.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

public class BotKit {
    public static final int PROTOCOL = 1;
    /** Starts the stderr line the safety net writes for each decision it replaces. */
    public static final String MARKER = "botkit: replaced ";
    static final List<String> ROLES_GIVING_BACK = List.of("president", "vice_president");

    public String name = "botkit-bot";
    public String version = null;
    public boolean safetyNet = true;
    public final GameState state = new GameState();

    /** Write a line to stderr (the bot's log). */
    public static void log(String text) {
        System.err.println(text);
        System.err.flush();
    }

    // ------------------------------------------------------------------------------ JSON

    /**
     * JSON as plain Java values: null, Boolean, Long (whole numbers), Double, String,
     * List<Object> and Map<String, Object> (keys in the order read).
     */
    public static final class Json {
        /** Deeper input is refused rather than parsed: the recursion must not overflow. */
        static final int MAX_DEPTH = 200;

        private final String text;
        private int pos;

        private Json(String text) {
            this.text = text;
        }

        /** Parse one JSON text; IllegalArgumentException says what is wrong and where. */
        public static Object parse(String text) {
            Json p = new Json(text);
            p.space();
            Object value = p.value(0);
            p.space();
            if (p.pos != text.length()) throw p.fail("unexpected text");
            return value;
        }

        /** The value as one line of JSON. */
        public static String write(Object value) {
            StringBuilder out = new StringBuilder();
            write(value, out);
            return out.toString();
        }

        private IllegalArgumentException fail(String what) {
            return new IllegalArgumentException(what + " at character " + pos);
        }

        private void space() {
            while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) pos++;
        }

        private boolean eat(String word) {
            if (text.startsWith(word, pos)) {
                pos += word.length();
                return true;
            }
            return false;
        }

        private Object value(int depth) {
            if (depth > MAX_DEPTH) throw fail("nested too deep");
            if (pos >= text.length()) throw fail("unexpected end");
            char c = text.charAt(pos);
            if (c == '{') return object(depth);
            if (c == '[') return array(depth);
            if (c == '"') return string();
            if (eat("true")) return Boolean.TRUE;
            if (eat("false")) return Boolean.FALSE;
            if (eat("null")) return null;
            if (c == '-' || (c >= '0' && c <= '9')) return number();
            throw fail("unexpected character");
        }

        private Map<String, Object> object(int depth) {
            pos++;
            Map<String, Object> members = new LinkedHashMap<>();
            space();
            if (eat("}")) return members;
            while (true) {
                space();
                if (pos >= text.length() || text.charAt(pos) != '"') throw fail("expected a key");
                String key = string();
                space();
                if (!eat(":")) throw fail("expected ':'");
                space();
                members.put(key, value(depth + 1));
                space();
                if (eat("}")) return members;
                if (!eat(",")) throw fail("expected ',' or '}'");
            }
        }

        private List<Object> array(int depth) {
            pos++;
            List<Object> items = new ArrayList<>();
            space();
            if (eat("]")) return items;
            while (true) {
                space();
                items.add(value(depth + 1));
                space();
                if (eat("]")) return items;
                if (!eat(",")) throw fail("expected ',' or ']'");
            }
        }

        private String string() {
            pos++;
            StringBuilder out = new StringBuilder();
            while (true) {
                if (pos >= text.length()) throw fail("unterminated string");
                char c = text.charAt(pos++);
                if (c == '"') return out.toString();
                if (c < 0x20) throw fail("control character in a string");
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (pos >= text.length()) throw fail("unterminated string");
                char e = text.charAt(pos++);
                switch (e) {
                    case '"': out.append('"'); break;
                    case '\\': out.append('\\'); break;
                    case '/': out.append('/'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'n': out.append('\n'); break;
                    case 'r': out.append('\r'); break;
                    case 't': out.append('\t'); break;
                    case 'u':
                        if (pos + 4 > text.length()) throw fail("short \\u escape");
                        try {
                            out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                        } catch (NumberFormatException err) {
                            throw fail("bad \\u escape");
                        }
                        pos += 4; // a surrogate pair arrives as two chars, as Java keeps it
                        break;
                    default: throw fail("bad escape");
                }
            }
        }

        private Object number() {
            int start = pos;
            boolean integral = true;
            while (pos < text.length()) {
                char c = text.charAt(pos);
                if (c == '.' || c == 'e' || c == 'E') integral = false;
                else if (!(c == '-' || c == '+' || (c >= '0' && c <= '9'))) break;
                pos++;
            }
            String digits = text.substring(start, pos);
            try {
                if (integral && digits.length() < 19) return Long.parseLong(digits);
                return Double.parseDouble(digits);
            } catch (NumberFormatException err) {
                throw fail("bad number");
            }
        }

        private static void write(Object value, StringBuilder out) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof String) {
                writeString((String) value, out);
            } else if (value instanceof Double || value instanceof Float) {
                double x = ((Number) value).doubleValue();
                out.append(Double.isFinite(x) ? Double.toString(x) : "null");
            } else if (value instanceof Number || value instanceof Boolean) {
                out.append(value);
            } else if (value instanceof Map) {
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                    if (!first) out.append(',');
                    first = false;
                    writeString(String.valueOf(e.getKey()), out);
                    out.append(':');
                    write(e.getValue(), out);
                }
                out.append('}');
            } else if (value instanceof Iterable) {
                out.append('[');
                boolean first = true;
                for (Object item : (Iterable<?>) value) {
                    if (!first) out.append(',');
                    first = false;
                    write(item, out);
                }
                out.append(']');
            } else {
                writeString(String.valueOf(value), out);
            }
        }

        private static void writeString(String s, StringBuilder out) {
            out.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"') out.append("\\\"");
                else if (c == '\\') out.append("\\\\");
                else if (c == '\n') out.append("\\n");
                else if (c == '\r') out.append("\\r");
                else if (c == '\t') out.append("\\t");
                else if (c < 0x20 || c > 0x7e) out.append(String.format("\\u%04x", (int) c));
                else out.append(c);
            }
            out.append('"');
        }
    }

    // --------------------------------------------------------------- reading messages

    /** The member {@code key} of a JSON object; null when absent or not an object. */
    public static Object get(Object obj, String key) {
        return obj instanceof Map ? ((Map<?, ?>) obj).get(key) : null;
    }

    public static String str(Object value) {
        return value instanceof String ? (String) value : null;
    }

    /** A whole number, or {@code otherwise}. */
    public static long num(Object value, long otherwise) {
        return value instanceof Long ? (Long) value : otherwise;
    }

    /** The items of a JSON array; empty for anything else. */
    public static List<Object> items(Object value) {
        if (!(value instanceof List)) return List.of();
        List<Object> out = new ArrayList<>();
        for (Object item : (List<?>) value) out.add(item);
        return out;
    }

    /** The strings of a JSON array (other items skipped): cards, ranks or names. */
    public static List<String> strings(Object value) {
        List<String> out = new ArrayList<>();
        for (Object item : items(value)) if (item instanceof String) out.add((String) item);
        return out;
    }

    /** The whole numbers of a JSON array, anything else counted as 0. */
    public static List<Long> longs(Object value) {
        List<Long> out = new ArrayList<>();
        for (Object item : items(value)) out.add(num(item, 0));
        return out;
    }

    // ------------------------------------------------------------------------- cards

    /** The rank token of a card: "10H" -> "10". */
    public static String rankOf(String card) {
        return card.isEmpty() ? "" : card.substring(0, card.length() - 1);
    }

    /** The suit letter of a card: "10H" -> "H". */
    public static String suitOf(String card) {
        return card.isEmpty() ? "" : card.substring(card.length() - 1);
    }

    /** Whether every card of {@code cards} is in {@code pool}, counting duplicates. */
    public static boolean takesFrom(List<String> pool, List<String> cards) {
        List<String> left = new ArrayList<>(pool);
        for (String card : cards) {
            if (!left.remove(card)) return false;
        }
        return true;
    }

    /** Whether a list holds null (List.of's lists refuse even to be asked contains(null)). */
    static boolean hasNull(List<?> items) {
        for (Object item : items) if (item == null) return true;
        return false;
    }

    /** The sorted rank tokens of a play, to compare plays regardless of suits. */
    public static List<String> rankKey(List<String> cards) {
        List<String> key = new ArrayList<>();
        for (String card : cards) key.add(rankOf(card));
        Collections.sort(key);
        return key;
    }

    // ------------------------------------------------------------------------- state

    /**
     * Everything a bot can know, kept up to date from the messages it receives. The hand is
     * tracked from round_start, received cards and your own decisions, and replaced by the
     * hand of every act (the referee's copy wins).
     */
    public static class GameState {
        public Object time = null;
        public String match = null;
        public int seat = 0;
        public List<String> players = new ArrayList<>();
        /** The match's complete ruleset, as sent: get(state.rules, "equal_rank") ... */
        public Object rules = null;
        /** Rank order, low to high. */
        public List<String> ranks = new ArrayList<>();
        public List<String> suits = new ArrayList<>();
        public long bankMs = 0;
        /** match_start's seed (protocol 1.2), null before 1.2; random is seeded from it. */
        public Long seed = null;
        public List<Long> scores = new ArrayList<>();
        public Object standings = null;
        public Set<Long> faulted = new HashSet<>();
        public long round = 0;
        public long dealer = 0;
        public List<String> hand = new ArrayList<>();
        /** Cards each seat holds, by seat (the referee's counts on every act). */
        public List<Long> handSizes = new ArrayList<>();
        public List<String> roles = null;
        public List<String> leftovers = new ArrayList<>();
        public List<String> played = new ArrayList<>();
        public List<String> outOfPlay = new ArrayList<>();
        public Map<Long, Long> places = new HashMap<>();
        public List<Long> lastPlaces = null;
        public Long requestId = null;
        public String kind = null;
        /** Every legal play of the current act of kind play. */
        public List<List<String>> legal = new ArrayList<>();
        public Long leader = null;
        /** What must be beaten; empty when you lead. */
        public List<String> top = new ArrayList<>();
        public long count = 0;
        public Long lastPlayer = null;
        public Set<Long> passed = new HashSet<>();
        public List<Long> trickPassed = new ArrayList<>();
        /** Reseeded at every match_start: state.random.nextDouble(). */
        public Random random = new Random(0);
        List<String> given = null;

        public GameState() {
            resetMatch();
        }

        /** Forget the current match (called on match_start). */
        public void resetMatch() {
            match = null;
            seat = 0;
            players = new ArrayList<>();
            rules = null;
            ranks = new ArrayList<>();
            suits = new ArrayList<>();
            bankMs = 0;
            seed = null;
            scores = new ArrayList<>();
            standings = null;
            faulted = new HashSet<>();
            resetRound();
        }

        /** Forget the current round (called on round_start). */
        public void resetRound() {
            round = 0;
            dealer = 0;
            hand = new ArrayList<>();
            handSizes = new ArrayList<>(Collections.nCopies(players.size(), 0L));
            roles = null;
            leftovers = new ArrayList<>();
            played = new ArrayList<>();
            outOfPlay = new ArrayList<>();
            places = new HashMap<>();
            lastPlaces = null;
            requestId = null;
            kind = null;
            legal = new ArrayList<>();
            given = null;
            newTrick(null);
        }

        /** Start a fresh trick led by {@code leader}. */
        public void newTrick(Long leader) {
            this.leader = leader;
            top = new ArrayList<>();
            count = 0;
            lastPlayer = null;
            passed = new HashSet<>();
            trickPassed = new ArrayList<>();
        }

        /** True when you are asked to play and there is nothing to beat. */
        public boolean leading() {
            return top.isEmpty();
        }

        /** Position of a rank (or a card's rank) in the order low -> high; -1 if unknown. */
        public int rankIndex(String cardOrRank) {
            int i = ranks.indexOf(cardOrRank);
            return i >= 0 ? i : ranks.indexOf(rankOf(cardOrRank));
        }

        /** Cards sorted low to high in this match's rank order, then suit order. */
        public List<String> sortCards(List<String> cards) {
            List<String> sorted = new ArrayList<>(cards);
            sorted.sort(
                    Comparator.comparingInt((String c) -> ranks.indexOf(rankOf(c)))
                            .thenComparingInt(c -> suits.indexOf(suitOf(c))));
            return sorted;
        }

        /** rank -> cards for the ranks present in {@code cards}, low to high. */
        public Map<String, List<String>> groupsByRank(List<String> cards) {
            Map<String, List<String>> groups = new LinkedHashMap<>();
            for (String card : sortCards(cards)) {
                groups.computeIfAbsent(rankOf(card), r -> new ArrayList<>()).add(card);
            }
            return groups;
        }

        /** Whether {@code rank} may be played on {@code topRank} (equal only under skip_next). */
        public boolean beats(String rank, String topRank) {
            int d = rankIndex(rank) - rankIndex(topRank);
            return "skip_next".equals(get(rules, "equal_rank")) ? d >= 0 : d > 0;
        }

        /** Whether a play emptying the hand may not contain {@code rank} (no_finish_on). */
        public boolean forbiddenFinish(String rank) {
            return strings(get(rules, "no_finish_on")).contains(rank);
        }

        /** Cards of {@code rank} that may still be in another player's hand (an upper bound). */
        public int unseen(String rank) {
            int known = 0;
            for (List<String> list : List.of(hand, played, outOfPlay, leftovers)) {
                for (String card : list) if (rankOf(card).equals(rank)) known++;
            }
            return Math.max(0, suits.size() - known);
        }

        /** True when no other player can beat {@code count} cards of {@code rank} any more. */
        public boolean isBoss(String rank, int count) {
            int start = rankIndex(rank);
            if (!"skip_next".equals(get(rules, "equal_rank"))) start++;
            for (int i = Math.max(0, start); i < ranks.size(); i++) {
                if (unseen(ranks.get(i)) >= count) return false;
            }
            return true;
        }

        /** Whether {@code cards} is a play the referee accepts now (cards in hand, in legal). */
        public boolean isLegalPlay(List<String> cards) {
            if (cards == null || hasNull(cards) || !takesFrom(hand, cards)) return false;
            List<String> key = rankKey(cards);
            for (List<String> play : legal) if (rankKey(play).equals(key)) return true;
            return false;
        }

        void remove(List<String> cards) {
            for (String card : cards) hand.remove(card);
        }

        private void addSize(Object seat, long delta) {
            if (!(seat instanceof Long)) return;
            long s = (Long) seat;
            if (s >= 0 && s < handSizes.size()) {
                handSizes.set((int) s, Math.max(0, handSizes.get((int) s) + delta));
            }
        }

        /** Update the state from one referee message (unknown types and fields are ignored). */
        public void apply(Object msg) {
            String type = String.valueOf(get(msg, "type"));
            switch (type) {
                case "hello": time = get(msg, "time"); break;
                case "match_start": onMatchStart(msg); break;
                case "round_start": onRoundStart(msg); break;
                case "act": onAct(msg); break;
                case "played": {
                    List<String> cards = strings(get(msg, "cards"));
                    played.addAll(cards);
                    if (num(get(msg, "seat"), -1) == seat) remove(cards);
                    addSize(get(msg, "seat"), -cards.size());
                    top = cards;
                    count = cards.size();
                    lastPlayer = get(msg, "seat") instanceof Long ? (Long) get(msg, "seat") : null;
                    break;
                }
                case "passed": passed.add(num(get(msg, "seat"), -1)); break;
                case "trick_end": {
                    Object next = get(msg, "leader");
                    newTrick(next instanceof Long ? (Long) next : null);
                    break;
                }
                case "finished": places.put(num(get(msg, "seat"), -1), num(get(msg, "place"), 0)); break;
                case "eliminated": {
                    long who = num(get(msg, "seat"), -1);
                    places.put(who, num(get(msg, "place"), 0));
                    outOfPlay.addAll(strings(get(msg, "cards")));
                    if (who == seat) hand = new ArrayList<>();
                    if (who >= 0 && who < handSizes.size()) handSizes.set((int) who, 0L);
                    break;
                }
                case "exchanged": onExchanged(msg); break;
                case "received": hand.addAll(strings(get(msg, "cards"))); break;
                case "leftover_taken": leftovers.remove(str(get(msg, "card"))); break;
                case "fault": faulted.add(num(get(msg, "seat"), -1)); break;
                case "round_end":
                    if (get(msg, "scores") instanceof List) scores = longs(get(msg, "scores"));
                    lastPlaces = longs(get(msg, "places"));
                    break;
                case "match_end": standings = get(msg, "standings"); break;
                default: break;
            }
        }

        private void onMatchStart(Object msg) {
            resetMatch();
            match = str(get(msg, "match"));
            seat = (int) num(get(msg, "seat"), 0);
            players = strings(get(msg, "players"));
            rules = get(msg, "rules");
            ranks = strings(get(rules, "ranks"));
            suits = strings(get(rules, "suits"));
            bankMs = num(get(msg, "bank_ms"), 0);
            seed = get(msg, "seed") instanceof Long ? (Long) get(msg, "seed") : null;
            scores = new ArrayList<>(Collections.nCopies(players.size(), 0L));
            // Protocol 1.2's seed: the same for this seat on the same cards, so both halves of
            // a `referee compare` pair draw alike. Before 1.2, the match id and seat.
            random = new Random(seed != null ? seed : (match + ":" + seat).hashCode());
            resetRound();
        }

        private void onRoundStart(Object msg) {
            resetRound();
            round = num(get(msg, "round"), 0);
            dealer = num(get(msg, "dealer"), 0);
            hand = strings(get(msg, "hand"));
            handSizes = longs(get(msg, "hand_sizes"));
            roles = get(msg, "roles") instanceof List ? strings(get(msg, "roles")) : null;
            if (get(msg, "scores") instanceof List) scores = longs(get(msg, "scores"));
            leftovers = strings(get(msg, "leftovers"));
        }

        private void onAct(Object msg) {
            requestId = get(msg, "id") instanceof Long ? (Long) get(msg, "id") : null;
            kind = str(get(msg, "kind"));
            if (get(msg, "hand") instanceof List) hand = strings(get(msg, "hand"));
            List<Object> counts = items(get(msg, "counts"));
            if (!counts.isEmpty() && counts.size() == handSizes.size()) {
                // Protocol 1.1: the referee's own counts replace the kit's bookkeeping.
                handSizes = longs(get(msg, "counts"));
            }
            if ("play".equals(kind)) {
                Object trick = get(msg, "trick");
                if (get(trick, "leader") instanceof Long) leader = (Long) get(trick, "leader");
                top = strings(get(trick, "top"));
                count = num(get(trick, "count"), top.size());
                trickPassed = longs(get(msg, "passed"));
                legal = new ArrayList<>();
                for (Object play : items(get(msg, "legal"))) legal.add(strings(play));
                bankMs = num(get(msg, "bank_ms"), bankMs);
            }
        }

        private void onExchanged(Object msg) {
            long n = num(get(msg, "count"), 0);
            addSize(get(msg, "from"), -n);
            addSize(get(msg, "to"), n);
            if (num(get(msg, "from"), -1) != seat) return;
            if (given != null) {
                given = null; // we chose these cards and removed them when replying
                return;
            }
            List<String> mine = sortCards(hand);
            int k = (int) Math.max(0, Math.min(n, mine.size()));
            boolean returning =
                    roles != null && seat < roles.size() && ROLES_GIVING_BACK.contains(roles.get(seat));
            remove(returning ? mine.subList(0, k) : mine.subList(mine.size() - k, mine.size()));
        }
    }

    // ---------------------------------------------------- decisions: the fallback policy

    /** Lead the single lowest card; otherwise pass. */
    public List<String> onPlay(GameState state) {
        return defaultPlay(state);
    }

    /** Give back the lowest cards. */
    public List<String> onGive(GameState state, int to, int count) {
        return defaultGive(state, count);
    }

    /** [take, discard]: take the highest offered card; discard the lowest card afterwards. */
    public List<String> onLeftover(GameState state, List<String> offer) {
        return defaultLeftover(state, offer);
    }

    /** Called for every message after the state is updated. */
    public void onEvent(GameState state, Object msg) {}

    public static List<String> defaultPlay(GameState state) {
        if (state.leading() && !state.hand.isEmpty()) return List.of(state.sortCards(state.hand).get(0));
        return List.of();
    }

    public static List<String> defaultGive(GameState state, int count) {
        List<String> sorted = state.sortCards(state.hand);
        return new ArrayList<>(sorted.subList(0, Math.min(count, sorted.size())));
    }

    public static List<String> defaultLeftover(GameState state, List<String> offer) {
        List<String> offered = state.sortCards(offer);
        String take = offered.isEmpty() ? "" : offered.get(offered.size() - 1);
        List<String> hand = new ArrayList<>(state.hand);
        hand.add(take);
        return List.of(take, state.sortCards(hand).get(0));
    }

    // --------------------------------------------------------------------- plumbing

    /** Your decision, or (the safety net) a safe one, said on stderr with a marker line. */
    private List<String> decide(
            Object msg,
            java.util.function.Supplier<List<String>> choose,
            java.util.function.Predicate<List<String>> isOk,
            java.util.function.Supplier<List<String>> fallback) {
        if (!safetyNet) return choose.get();
        List<String> choice = null;
        Throwable error = null;
        try {
            choice = choose.get();
            if (choice != null && isOk.test(choice)) return choice;
        } catch (RuntimeException | StackOverflowError | AssertionError err) {
            error = err;
        }
        List<String> safe = fallback.get();
        Map<String, Object> marker = new LinkedHashMap<>();
        marker.put("id", get(msg, "id"));
        marker.put("kind", get(msg, "kind"));
        marker.put("decided", choice);
        marker.put("sent", safe);
        marker.put("why", error == null ? "not allowed" : "raised");
        if (error != null) {
            String text = error.toString();
            marker.put("error", text.length() > 200 ? text.substring(0, 200) : text);
        }
        String line = Json.write(marker);
        if (line.length() > 1000) {
            String shown = Json.write(choice);
            marker.put("decided", shown.substring(0, Math.min(200, shown.length())));
            line = Json.write(marker);
        }
        log(MARKER + line);
        if (error != null) error.printStackTrace(System.err);
        return safe;
    }

    private List<String> safePlay() {
        if (!state.leading()) {
            for (List<String> play : state.legal) if (play.isEmpty()) return List.of();
        }
        if (!state.legal.isEmpty()) return state.legal.get(0);
        return defaultPlay(state);
    }

    private Map<String, Object> act(Object msg) {
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("id", get(msg, "id"));
        String kind = String.valueOf(get(msg, "kind"));
        if (kind.equals("play")) {
            List<String> cards = decide(msg, () -> onPlay(state), state::isLegalPlay, this::safePlay);
            state.remove(cards);
            reply.put("cards", cards);
        } else if (kind.equals("give")) {
            int to = (int) num(get(msg, "to"), -1);
            int count = (int) Math.max(0, num(get(msg, "count"), 0));
            List<String> cards = decide(
                    msg,
                    () -> onGive(state, to, count),
                    c -> c.size() == count && !hasNull(c) && takesFrom(state.hand, c),
                    () -> defaultGive(state, count));
            state.remove(cards);
            state.given = new ArrayList<>(cards);
            reply.put("cards", cards);
        } else if (kind.equals("leftover")) {
            List<String> offer = strings(get(msg, "offer"));
            List<String> choice = decide(
                    msg,
                    () -> onLeftover(state, offer),
                    c -> c.size() == 2 && !hasNull(c) && offer.contains(c.get(0))
                            && (state.hand.contains(c.get(1)) || c.get(0).equals(c.get(1))),
                    () -> defaultLeftover(state, offer));
            state.hand.add(choice.get(0));
            state.hand.remove(choice.get(1));
            state.outOfPlay.add(choice.get(1));
            reply.put("take", choice.get(0));
            reply.put("discard", choice.get(1));
        } else {
            log("botkit: unknown act kind " + Json.write(get(msg, "kind")) + "; answering with an empty play");
            reply.put("cards", List.of());
        }
        return reply;
    }

    /** Process one message; the reply object for a request, else null. */
    public Map<String, Object> handle(Object msg) {
        try {
            state.apply(msg);
        } catch (RuntimeException err) { // a malformed message must not take the bot down
            log("botkit: could not follow a message; continuing: " + err);
        }
        onEvent(state, msg);
        String type = String.valueOf(get(msg, "type"));
        if (type.equals("hello")) {
            Map<String, Object> reply = new LinkedHashMap<>();
            reply.put("id", get(msg, "id"));
            reply.put("type", "ready");
            reply.put("name", name);
            if (version != null) reply.put("version", version);
            return reply;
        }
        if (type.equals("act")) return act(msg);
        return null;
    }

    /** Serve the referee until "bye" or end of input: a line read, a line answered and flushed. */
    public void run() {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // stdout is the protocol's: a stray println goes to the log
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (true) {
            String line;
            try {
                line = in.readLine();
            } catch (IOException err) {
                log("botkit: cannot read stdin: " + err);
                return;
            }
            if (line == null) return;
            Object msg;
            try {
                msg = Json.parse(line);
            } catch (IllegalArgumentException | StackOverflowError err) {
                String start = line.length() > 80 ? line.substring(0, 80) : line;
                log("botkit: ignoring a line that is not JSON (" + err.getMessage() + "): " + start);
                continue;
            }
            if (!(msg instanceof Map)) continue;
            Map<String, Object> reply = handle(msg);
            if (reply != null) {
                out.print(Json.write(reply) + "\n");
                out.flush();
                if (out.checkError()) return; // the referee closed the pipe
            }
            if ("bye".equals(get(msg, "type"))) return;
        }
    }
}
