# Next fire times by fugit, the gem GitLab's Gitlab::Ci::CronParser uses: for the fugit oracle
# (fugit_oracle.py). Reads `cron<TAB>zone<TAB>from_unix<TAB>count` lines and writes one line per
# input line: `ok<TAB>t1...` or `error`. The zone is resolved as GitLab does (Rails names are
# mapped first by the caller) and appended to the cron text: Fugit::Cron.parse("#{cron} #{zone}").
# With the argument `sidekiq_cron`, as Sidekiq-cron 1.8 reads a job's cron: Fugit.do_parse of the
# text with its zone suffix (none when the zone is empty: the process's zone, TZ), a Fugit::Cron.
require "fugit"

sidekiq = ARGV[0] == "sidekiq_cron"

$stdout.sync = true
$stdin.each_line do |line|
  cron, zone, from, count = line.chomp.split("\t")
  parsed = begin
    if sidekiq
      c = Fugit.do_parse(zone.to_s.empty? ? cron : "#{cron} #{zone}")
      c.is_a?(Fugit::Cron) ? c : nil
    else
      Fugit::Cron.parse("#{cron} #{zone}")
    end
  rescue StandardError
    nil
  end
  if parsed.nil?
    puts "error"
    next
  end
  t = ::Time.at(from.to_i).utc
  times = []
  count.to_i.times do
    t = parsed.next_time(t)
    times << t.to_i
  end
  puts (["ok"] + times).join("\t")
rescue StandardError => e
  puts "error\t#{e.class}"
end
