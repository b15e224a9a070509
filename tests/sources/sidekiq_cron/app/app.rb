# A small Sidekiq 6.4 application with Sidekiq-cron 1.8 for sidekiq_cron_e2e_test.py: jobs that
# succeed, raise (one retry a second later, then the dead set) and hang. Its schedule is
# config/schedule.yml in the working directory (SCHEDULE), loaded with load_from_hash! at start
# so that a job removed from it is destroyed (Sidekiq-cron's own loader, load_from_hash, keeps
# removed jobs in Redis: they go on running).
require "sidekiq"
require "sidekiq-cron"
require "yaml"

Sidekiq.options[:cron_poll_interval] = 1
Sidekiq.options[:poll_interval_average] = 1
Sidekiq.options[:average_scheduled_poll_interval] = 1

class OkJob
  include Sidekiq::Worker
  def perform(*_args); end  # reconcile's template gives it arguments
end

class BoomJob
  include Sidekiq::Worker
  sidekiq_options retry: 1
  sidekiq_retry_in { |_count, _exception| 1 }
  def perform
    raise "boom"
  end
end

class HangJob
  include Sidekiq::Worker
  def perform
    sleep 120
  end
end

Sidekiq.configure_server do |config|
  config.on(:startup) do
    Sidekiq::Cron::Job.load_from_hash!(YAML.load_file(ENV.fetch("SCHEDULE")))
  end
end
