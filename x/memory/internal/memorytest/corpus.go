package memorytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/memory"
)

// Question is a question whose answer is the fact Corpus put at Answer.
type Question struct {
	Text   string
	Answer int
	// Paraphrase says that the question shares no word with its fact but
	// the person's name.
	Paraphrase bool
}

var (
	firstNames = words(`Ada Alan Alice Amir Anna Arjun Astrid Beatriz Ben Bianca Bruno Carla Carlos Chen Chloe Dario Diana
		Dmitri Elena Emeka Emma Enzo Farah Felix Fatima Gabriel Grace Hana Hugo Ines Ivan Jamal Jana Jonas Julia Kai Kenji
		Lara Leila Leon Lina Lucas Maya Mateo Mei Mira Nadia Nico Nina Noah Olga Omar Oscar Paula Pedro Priya Quinn Rafael
		Rosa Ruth Sami Sara Sofia Stefan Tara Teo Tomas Uma Vera Victor Wen Xavier Yara Yusuf Zara Zoe Abel Agnes Boris
		Clara Dora Elias Freya Gustav Helga Igor Joel Karin Luis Magnus Nora Otto Pia Rolf Selma Tilda Ola Per Rui Saul`)
	lastNames = words(`Smith Garcia Muller Rossi Silva Kowalski Novak Jensen Dubois Costa Yamamoto Kim Nguyen Patel Okafor
		Haddad Ivanova Larsen Moreau Santos Tanaka Weber Fischer Ricci Horvat Berg Lindqvist Kaya Demir Cohen Levi Sato Wong
		Zhang Liu Singh Khan Ali Hassan Mensah Diallo Banda Mwangi Alvarez Torres Romero Vargas Castro Ortiz Reyes Flores
		Morales Herrera Medina Aguilar Navarro Ramos Molina Delgado Vega Campos Fuentes Carrillo Pena Rios Sandoval Guerrero
		Mendoza Ibarra Salazar Cabrera Acosta Lozano Duarte Pereira Rocha Lopes Teixeira Moura Barbosa Cardoso Nunes Ferraz
		Antunes Lindgren Holm Eriksen Virtanen Korhonen Nieminen Makela Hamalainen Laine Heikkinen Koskinen Jarvinen Lehtonen
		Saarinen Salminen Ahonen Turunen`)
	cities = words(`Lisbon Porto Madrid Seville Paris Lyon Berlin Hamburg Munich Vienna Prague Warsaw Krakow Budapest Rome
		Milan Naples Athens Oslo Bergen Stockholm Helsinki Copenhagen Dublin Edinburgh Leeds Cardiff Toronto Montreal Lima
		Bogota Quito Santiago Mendoza Nairobi Accra Lagos Cairo Tunis Istanbul Izmir Tbilisi Delhi Mumbai Pune Dhaka Hanoi
		Manila Osaka Kyoto Seoul Busan Sydney Perth Auckland`)
	jobs = words(`nurse baker carpenter pilot teacher plumber chemist architect lawyer librarian farmer welder surgeon
		translator journalist electrician dentist gardener accountant photographer`)
	foods = words(`sardines paella ramen pierogi couscous lasagne dumplings tacos risotto curry falafel pho goulash
		moussaka ceviche sushi borscht hummus kimchi croissants`)
	animals = words(`cat dog parrot rabbit tortoise hamster ferret goldfish lizard canary`)
	pets    = words(`Biscuit Pepper Mango Shadow Luna Pixel Noodle Ziggy Olive Rocket Maple Pickle Comet Juniper Waffle`)
	colours = words(`red blue green yellow purple orange teal grey black white`)
	cars    = words(`Volvo Fiat Skoda Toyota Honda Renault Peugeot Kia Mazda Subaru`)
	things  = words(`peanuts penicillin shellfish pollen latex gluten dust wasps cats strawberries`)
	instr   = words(`violin cello piano trumpet guitar flute drums clarinet harp accordion`)
	langs   = words(`Portuguese Spanish French German Italian Polish Swedish Finnish Turkish Hindi Japanese Korean
		Swahili Arabic Greek`)
)

func words(s string) []string { return strings.Fields(s) }

// attributes are the ten things a person's facts say, each with the fact
// and a question that shares one word with it (after Terms).
var attributes = []func(r *rand.Rand, p string) (fact, question string){
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s lives in %s.", p, pick(r, cities)), fmt.Sprintf("Where does %s live?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s works as a %s.", p, pick(r, jobs)), fmt.Sprintf("What is %s's job, what work do they do?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s's favourite food is %s.", p, pick(r, foods)), fmt.Sprintf("What food does %s like most?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s has a pet %s named %s.", p, pick(r, animals), pick(r, pets)), fmt.Sprintf("What is the name of %s's pet?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s was born in %d.", p, 1940+r.IntN(70)), fmt.Sprintf("Which year was %s born?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s drives a %s %s car.", p, pick(r, colours), pick(r, cars)), fmt.Sprintf("What car does %s drive?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s is allergic to %s.", p, pick(r, things)), fmt.Sprintf("Does %s have any allergies? What are they allergic to?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s plays the %s.", p, pick(r, instr)), fmt.Sprintf("Which musical instrument does %s play?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s's favourite colour is %s.", p, pick(r, colours)), fmt.Sprintf("Which colour does %s like best?", p)
	},
	func(r *rand.Rand, p string) (string, string) {
		return fmt.Sprintf("%s speaks %s at home.", p, pick(r, langs)), fmt.Sprintf("What language does %s speak?", p)
	},
}

// paraphrases ask the same ten things sharing no word with the fact but
// the person's name (%s), as a user who does not remember the wording would.
var paraphrases = []string{
	"Which town is %s's home?",
	"How does %s earn a living?",
	"What dish does %s enjoy eating?",
	"Which animal keeps %s company?",
	"How old is %s?",
	"What vehicle does %s own?",
	"What should %s avoid because of a reaction?",
	"Is %s musical?",
	"What shade does %s prefer?",
	"In which tongue does %s talk with family?",
}

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

// Corpus generates n facts, ten about each of n/10 people (where they
// live, their job, food, pet, birth year, car, allergy, instrument,
// colour, language), and q questions about them with the index of the
// fact that answers each: every other one shares a word with its fact
// ("Which colour does Ada Smith like best?"), the rest only the name
// ("What shade does Ada Smith prefer?"). The same n and q give the same
// corpus.
func Corpus(n, q int) ([]string, []Question) {
	r := rand.New(rand.NewPCG(44, 2026))
	people := n / len(attributes)
	if people > len(firstNames)*len(lastNames) {
		panic("memorytest: more people than distinct names")
	}
	// Each person a distinct first and last name, in a shuffled order.
	perm := r.Perm(len(firstNames) * len(lastNames))[:people]
	facts := make([]string, 0, people*len(attributes))
	questions := make([]string, 0, cap(facts))
	names := make([]string, 0, cap(facts))
	for i := range people {
		k := perm[i]
		p := firstNames[k%len(firstNames)] + " " + lastNames[k/len(firstNames)]
		for _, a := range attributes {
			f, qu := a(r, p)
			facts = append(facts, f)
			questions = append(questions, qu)
			names = append(names, p)
		}
	}
	qs := make([]Question, q)
	for i := range qs {
		a := r.IntN(len(facts))
		qs[i] = Question{Text: questions[a], Answer: a}
		if i%2 == 1 {
			qs[i] = Question{Text: fmt.Sprintf(paraphrases[a%len(attributes)], names[a]), Answer: a, Paraphrase: true}
		}
	}
	return facts, qs
}

// Bench saves n facts of Corpus in the store open returns, spread over
// users scopes in blocks (a person's facts in one scope), in batches before
// the timer; it measures recall@1 and recall@5 of the questions, each
// asked in its answer's scope, then times Search over them.
func Bench(b *testing.B, open Opener, n, users int) {
	ctx := context.Background()
	s := open(b)
	defer s.Close()
	facts, questions := Corpus(n, 200)
	per := len(facts) / users
	scope := func(i int) memory.Scope {
		return memory.Scope{Tenant: "acme", User: fmt.Sprint("user", min(i/per, users-1))}
	}
	start := time.Now()
	ids := make([]string, 0, len(facts))
	const batch = 1000
	for i := 0; i < len(facts); {
		j := min(i+batch, len(facts))
		if sc := scope(i); scope(j-1) != sc {
			for scope(j-1) != sc {
				j--
			}
		}
		saved, err := s.Save(ctx, scope(i), facts[i:j]...)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range saved {
			ids = append(ids, f.ID)
		}
		i = j
	}
	saveTime := time.Since(start)
	var hit1, hit5, para5, paras int
	for _, q := range questions {
		if q.Paraphrase {
			paras++
		}
		got, err := s.Search(ctx, scope(q.Answer), q.Text, 5)
		if err != nil {
			b.Fatal(err)
		}
		for i, f := range got {
			if f.ID == ids[q.Answer] {
				hit5++
				if q.Paraphrase {
					para5++
				}
				if i == 0 {
					hit1++
				}
			}
		}
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		q := questions[i%len(questions)]
		if _, err := s.Search(ctx, scope(q.Answer), q.Text, 5); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(hit1)/float64(len(questions)), "recall@1")
	b.ReportMetric(float64(hit5)/float64(len(questions)), "recall@5")
	b.ReportMetric(float64(hit5-para5)/float64(len(questions)-paras), "worded-recall@5")
	b.ReportMetric(float64(para5)/float64(paras), "paraphrase-recall@5")
	b.ReportMetric(float64(saveTime.Microseconds())/float64(len(facts)), "save-µs/fact")
}
