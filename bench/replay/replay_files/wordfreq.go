// Command wordfreq prints the most frequent words of its input.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode"
)

type entry struct {
	word  string
	count int
}

func tokenize(line string) []string {
	fields := strings.FieldsFunc(line, func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	})
	words := make([]string, 0, len(fields))
	for _, field := range fields {
		word := strings.ToLower(strings.Trim(field, "'"))
		if word != "" {
			words = append(words, word)
		}
	}
	return words
}

func count(r io.Reader) (map[string]int, error) {
	counts := make(map[string]int)
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		for _, word := range tokenize(scanner.Text()) {
			counts[word]++
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return counts, nil
}

func top(counts map[string]int, n int) []entry {
	entries := make([]entry, 0, len(counts))
	for word, c := range counts {
		entries = append(entries, entry{word, c})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].count != entries[j].count {
			return entries[i].count > entries[j].count
		}
		return entries[i].word < entries[j].word
	})
	if len(entries) > n {
		entries = entries[:n]
	}
	return entries
}

func main() {
	n := flag.Int("n", 10, "number of words to print")
	flag.Parse()
	counts, err := count(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wordfreq:", err)
		os.Exit(1)
	}
	for _, e := range top(counts, *n) {
		fmt.Printf("%7d %s\n", e.count, e.word)
	}
}
